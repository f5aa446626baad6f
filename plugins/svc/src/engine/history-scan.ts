import type {parseTrailers} from './commit-message.js'
import type {IndexedCommit} from './history-store.js'

/**
 * The one `git log` pass that walks the commits of `range` oldest first (no per-commit process,
 * no blob reads). The names are what `git log -- <path>` compares (each commit against its first
 * parent, the root against the empty tree), so a document's commits in the index are exactly the
 * ones that walk finds.
 */
export function logArgs(range: string[]): string[] {
  return ['-c', 'core.quotepath=off', 'log', '--reverse', '--root', '--no-renames', '--no-color', '--name-only', '--format=%x1e%H%x00%ct%x00%B%x00', ...range, '--']
}

/** What commitScanner needs of a decoder: node's StringDecoder, which keeps a character split across chunks for the next one. */
export interface ChunkDecoder {
  end(): string
  write(chunk: Uint8Array): string
}

export interface CommitScanner {
  /** The next chunk of logArgs' output, as it came. */
  push(chunk: Uint8Array): void
  /** The output ended: the last commits are handed over. */
  end(): void
}

/**
 * Parses logArgs' output as it streams and hands the commits to `onBatch` in batches, so an index
 * is rebuilt or caught up while the walk runs. Chunks go through one streaming decoder: a chunk
 * may end inside a multi-byte character (a user name, an id in the message), which decoding each
 * chunk alone turned into U+FFFD.
 *
 * Self-contained (no imports, no module constants): the history worker runs its source text
 * (history-worker.ts), so the thread and the worker parse with the same code.
 */
export function commitScanner(parse: typeof parseTrailers, decoder: ChunkDecoder, onBatch: (commits: IndexedCommit[]) => void, batchSize = 2000): CommitScanner {
  // An expiry marker beside a document (ids.ts expiryPath): never part of a document's history.
  const expiryMarker = /\.expires-\d{1,16}$/
  let buf = ''
  let batch: IndexedCommit[] = []
  const record = (r: string): void => {
    const a = r.indexOf('\0')
    const b = r.indexOf('\0', a + 1)
    const c = r.indexOf('\0', b + 1)
    if (a === -1 || b === -1 || c === -1) return
    const t = parse(r.slice(b + 1, c))
    const ms = t.time === undefined ? null : Date.parse(t.time)
    const exact = ms !== null && Number.isFinite(ms) && new Date(ms).toISOString() === t.time
    const paths: string[] = []
    for (const line of r.slice(c + 1).split('\n')) if (line !== '' && !expiryMarker.test(line)) paths.push(line)
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
      const full = batch
      batch = []
      onBatch(full)
    }
  }
  const take = (text: string): void => {
    buf += text
    const last = buf.lastIndexOf('\x1e')
    if (last <= 0) return
    const done = buf.slice(0, last)
    buf = buf.slice(last)
    for (const r of done.split('\x1e')) if (r !== '') record(r)
  }
  return {
    end(): void {
      buf += decoder.end()
      for (const r of buf.split('\x1e')) if (r !== '') record(r)
      buf = ''
      if (batch.length > 0) {
        const last = batch
        batch = []
        onBatch(last)
      }
    },
    push(chunk: Uint8Array): void {
      take(decoder.write(chunk))
    },
  }
}
