import {DocMap} from './doc-map.js'
import type {FieldIndex} from './field-index.js'
import {gitStream} from './git.js'
import {classifyPath, docPath, idFromBody, isLegacyPath, legacyDocPath, MAX_FILE_NAME, type ParsedId, tableOf} from './ids.js'
import type {BlobReader} from './reader.js'
import type {Doc, Logger} from './types.js'

/** The current version of one document on one branch. */
export interface DocEntry {
  /** Body of a write not yet in Git (read-your-writes). */
  body?: Buffer
  /**
   * The parsed document, kept for hot ids by `HotDocs` (hot-docs.ts) and taken off by it: the
   * content of this entry's blob, so never stale; never copied to another entry.
   */
  doc?: Doc
  /** Epoch ms after which the document is gone (swept by the engine with origin `expiry`). */
  expiresAt?: number
  /** Stored in the two-level layout of a repository written before (legacyDocPath), and kept there. */
  legacy?: true
  /** Tree path, only when it is not docPath(id) (a name written before long keys were hashed). */
  path?: string
  seq: number
  sha: string
}

/** What the engine holds in memory for one branch: every id's current blob, by table. */
export interface BranchState {
  docs: DocMap
  exists: boolean
  /** Ids whose entry has an expiry (entries are replaced, never mutated: branches share them). */
  expiring: Set<string>
  /** Secondary field indexes by name. */
  indexes?: Map<string, FieldIndex & {failed?: string}>
  name: string
  /**
   * Each table's document count, and its ids in order once a listing asked for them. A count, not
   * a Set of the ids: the map already holds every id, and at a million documents a second hash
   * table of them was ~21 MB more for every full GC to mark (issue 26, docs/benchmarks.md "A
   * denser document map").
   */
  tables: Map<string, TableState>
}

export interface TableState {
  count: number
  /** The table's ids in order; replaced (never changed in place) and dropped when an id comes or goes. */
  sorted?: string[]
}

/** The state of `table` on `b`, made empty when the branch has none yet. */
export function tableState(b: BranchState, table: string): TableState {
  let t = b.tables.get(table)
  if (t === undefined) b.tables.set(table, (t = {count: 0}))
  return t
}

/** The ids of `table` in order, from the document map, sorted once until an id comes or goes. */
export function sortedTableIds(b: BranchState, table: string): string[] {
  const t = b.tables.get(table)
  if (t === undefined) return []
  if (t.sorted === undefined) {
    const prefix = `${table}:`
    const ids: string[] = []
    for (const id of b.docs.keys()) if (id.startsWith(prefix)) ids.push(id)
    t.sorted = ids.sort()
  }
  return t.sorted
}

export function emptyBranch(name: string, exists: boolean): BranchState {
  return {docs: new DocMap(), exists, expiring: new Set(), name, tables: new Map()}
}

/** A new branch sharing `from`'s entries (they are never mutated, so sharing is safe). */
export function forkBranch(from: BranchState, name: string): BranchState {
  const state: BranchState = {docs: DocMap.copyOf(from.docs), exists: true, expiring: new Set(from.expiring), name, tables: new Map()}
  for (const [t, v] of from.tables) state.tables.set(t, {count: v.count, sorted: v.sorted})
  return state
}

/**
 * Fills `state` from the tree of `commit`: one `git ls-tree -r` (documents named by their id),
 * plus a read of each document stored under a hashed name (its id is in its body), plus the
 * expiry markers. Calls `onExpiry` for every document that has one.
 */
export async function loadBranchTree(
  repo: string,
  reader: BlobReader,
  state: BranchState,
  commit: string,
  log: Logger,
  onExpiry: (id: string, at: number) => void,
): Promise<void> {
  const hashed: Array<{path: string; sha: string}> = []
  const markers: Array<{at: number; docPath: string}> = []
  const add = (id: string, sha: string, e?: DocEntry): void => {
    const before = state.docs.size
    if (e === undefined) state.docs.setLoaded(id, sha)
    else state.docs.set(id, e)
    if (state.docs.size !== before) tableState(state, tableOf(id)).count++
  }
  await gitStream(
    repo,
    ['ls-tree', '-r', '-z', commit],
    lsTreeEntries((path, sha) => {
      const kind = classifyPath(path)
      if (kind === undefined) return
      if (kind.kind === 'doc') {
        // Written before long keys got hashed names: keep updating the file where it is.
        const long = path.length - path.lastIndexOf('/') - 1 > MAX_FILE_NAME
        // A flag rather than the path: a million documents of an old repository would otherwise hold a million strings.
        add(kind.id, sha, long ? {path, seq: 0, sha} : isLegacyPath(path) ? {legacy: true, seq: 0, sha} : undefined)
      } else if (kind.kind === 'hashed') hashed.push({path, sha})
      else markers.push(kind)
    }),
  )
  const byPath = new Map<string, string>()
  if (hashed.length > 0) {
    const bodies = await Promise.all(hashed.map((h) => reader.read(h.sha)))
    for (const [i, h] of hashed.entries()) {
      const body = bodies[i]
      const id = body && idFromBody(body)
      if (!id) {
        log.error('a document under a hashed name has no readable id; skipped', {object: h.sha, path: h.path})
        continue
      }
      byPath.set(h.path, id)
      add(id, h.sha, isLegacyPath(h.path) ? {legacy: true, seq: 0, sha: h.sha} : undefined)
    }
  }
  for (const m of markers) {
    const c = classifyPath(m.docPath)
    const id = c?.kind === 'doc' ? c.id : byPath.get(m.docPath)
    const e = id === undefined ? undefined : state.docs.get(id)
    if (!id || !e) continue
    state.docs.set(id, {...e, expiresAt: m.at})
    state.expiring.add(id)
    onExpiry(id, m.at)
  }
}

/** Where the current version of a document is (or goes): where it already is, else docPath. */
export function entryPath(p: ParsedId, e: DocEntry | undefined): string {
  return e?.path ?? (e?.legacy ? legacyDocPath(p) : docPath(p))
}

/**
 * A handler of `git ls-tree -z` output chunks that calls `onEntry` with each line's path and
 * object id. Both are decoded from the bytes into strings of their own: slices of one decoded
 * chunk (what `split` and `slice` make) would keep the chunk's whole text alive for as long as any
 * document-map entry lives, ~80 bytes a document (docs/benchmarks.md "A denser document map").
 * A line cut between two chunks, even inside a multi-byte character, is decoded once whole.
 */
export function lsTreeEntries(onEntry: (path: string, sha: string) => void): (chunk: Buffer) => void {
  let rest: Buffer | undefined
  return (chunk) => {
    const buf = rest === undefined ? chunk : Buffer.concat([rest, chunk])
    let start = 0
    for (let nul = buf.indexOf(0, start); nul !== -1; start = nul + 1, nul = buf.indexOf(0, start)) {
      // <mode> SP <type> SP <sha> TAB <path> NUL
      const tab = buf.indexOf(9, start)
      if (tab === -1 || tab > nul || tab - 40 < start) continue
      onEntry(buf.toString('utf8', tab + 1, nul), buf.toString('latin1', tab - 40, tab))
    }
    // A copy: the chunk's buffer may be a slice of a larger one this would otherwise keep.
    rest = start < buf.length ? Buffer.from(buf.subarray(start)) : undefined
  }
}
