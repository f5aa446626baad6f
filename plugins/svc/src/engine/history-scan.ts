import {gitStream} from './git.js'
import {parseTrailers} from './commit-message.js'
import type {IndexedCommit} from './history-store.js'

/** An expiry marker beside a document (ids.ts expiryPath): never part of a document's history. */
const EXPIRY_MARKER = /\.expires-\d{1,16}$/

/**
 * Walks the commits of `range` oldest first in one `git log --name-only` pass (no per-commit
 * process, no blob reads) and hands them to `onBatch` in batches, so an index is rebuilt or caught
 * up while the walk streams. The names are what `git log -- <path>` compares (each commit against
 * its first parent, the root against the empty tree), so a document's commits in the index are
 * exactly the ones that walk finds.
 */
export async function scanCommits(repo: string, range: string[], onBatch: (commits: IndexedCommit[]) => void, signal: AbortSignal, batchSize = 2000): Promise<void> {
  let buf = ''
  let batch: IndexedCommit[] = []
  const record = (r: string): void => {
    const a = r.indexOf('\0')
    const b = r.indexOf('\0', a + 1)
    const c = r.indexOf('\0', b + 1)
    if (a === -1 || b === -1 || c === -1) return
    const message = r.slice(b + 1, c)
    const t = parseTrailers(message)
    const ms = t.time === undefined ? null : Date.parse(t.time)
    const exact = ms !== null && Number.isFinite(ms) && new Date(ms).toISOString() === t.time
    const paths: string[] = []
    for (const line of r.slice(c + 1).split('\n')) if (line !== '' && !EXPIRY_MARKER.test(line)) paths.push(line)
    batch.push({
      ct: Number(r.slice(a + 1, b)),
      hasTime: t.time !== undefined,
      meta: Object.keys(t.meta).length > 0 ? JSON.stringify(t.meta) : null,
      ms: exact ? ms : null,
      paths,
      sha: r.slice(0, a),
      timeText: t.time !== undefined && !exact ? t.time : null,
    })
    if (batch.length >= batchSize) {
      onBatch(batch)
      batch = []
    }
  }
  await gitStream(
    repo,
    ['-c', 'core.quotepath=off', 'log', '--reverse', '--root', '--no-renames', '--no-color', '--name-only', '--format=%x1e%H%x00%ct%x00%B%x00', ...range, '--'],
    (chunk) => {
      buf += chunk.toString('utf8')
      const last = buf.lastIndexOf('\x1e')
      if (last <= 0) return
      const done = buf.slice(0, last)
      buf = buf.slice(last)
      for (const r of done.split('\x1e')) if (r !== '') record(r)
    },
    signal,
    'git log',
  )
  for (const r of buf.split('\x1e')) if (r !== '') record(r)
  if (batch.length > 0) onBatch(batch)
}
