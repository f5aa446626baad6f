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
 *
 * `maxNewFilters` bounds the filters computed by this write (`--max-new-filters`): each one is a
 * diff of a commit's trees with its parent's, ~55 us of git's CPU per commit at 1M documents, most
 * of what the write costs (7.3 s of git's CPU for a layer of 128k commits, 0.9 s without them). The commits left
 * without one are still in the graph (walks skip parsing them) and a walk diffs them as it would
 * without a graph; layers merged later keep the filters they had (docs/benchmarks.md, "The
 * background Git maintenance a write stream pays at 1M"). Without it, every new commit gets one.
 */
export function writeCommitGraph(repo: string, signal: AbortSignal, maxNewFilters?: number): Promise<Error | undefined> {
  if (signal.aborted) return Promise.resolve(undefined)
  const bound = maxNewFilters === undefined ? [] : [`--max-new-filters=${maxNewFilters}`]
  return gitStream(repo, ['commit-graph', 'write', '--reachable', '--changed-paths', ...bound, '--split', '--no-progress'], () => {}, signal, 'git commit-graph write', {background: true}).then(
    () => undefined,
    (error: Error) => (signal.aborted ? undefined : error),
  )
}

export function hasCommitGraph(repo: string): boolean {
  const info = join(repo, 'objects', 'info')
  return existsSync(join(info, 'commit-graph')) || existsSync(join(info, 'commit-graphs', 'commit-graph-chain'))
}
