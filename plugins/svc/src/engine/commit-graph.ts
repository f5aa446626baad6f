import {existsSync} from 'node:fs'
import {join} from 'node:path'

import {gitStream} from './git.js'

/**
 * A document's history is `git log -- <path>`, which walks every commit of the branch: at 100k
 * commits that took 2.3 s of CPU, and the console's history view waited for it. Git's commit-graph
 * with changed-path Bloom filters lets that walk skip parsing commits and diffing trees that cannot
 * touch the path (0.26 s at 100k). Layers are split so each write adds only the new commits.
 * Resolves when done; a failure or an abort (at close: Git removes its lock file on SIGTERM) only
 * leaves history reads slower, so it resolves then too, with the reason.
 */
export function writeCommitGraph(repo: string, signal: AbortSignal): Promise<Error | undefined> {
  if (signal.aborted) return Promise.resolve(undefined)
  return gitStream(repo, ['commit-graph', 'write', '--reachable', '--changed-paths', '--split', '--no-progress'], () => {}, signal, 'git commit-graph write', {background: true}).then(
    () => undefined,
    (error: Error) => (signal.aborted ? undefined : error),
  )
}

export function hasCommitGraph(repo: string): boolean {
  const info = join(repo, 'objects', 'info')
  return existsSync(join(info, 'commit-graph')) || existsSync(join(info, 'commit-graphs', 'commit-graph-chain'))
}
