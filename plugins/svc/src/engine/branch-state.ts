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
  tables: Map<string, {ids: Set<string>; sorted?: string[]}>
}

export function emptyBranch(name: string, exists: boolean): BranchState {
  return {docs: new DocMap(), exists, expiring: new Set(), name, tables: new Map()}
}

/** A new branch sharing `from`'s entries (they are never mutated, so sharing is safe). */
export function forkBranch(from: BranchState, name: string): BranchState {
  const state: BranchState = {docs: DocMap.copyOf(from.docs), exists: true, expiring: new Set(from.expiring), name, tables: new Map()}
  for (const [t, v] of from.tables) state.tables.set(t, {ids: new Set(v.ids)})
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
  let rest = ''
  const hashed: Array<{path: string; sha: string}> = []
  const markers: Array<{at: number; docPath: string}> = []
  const add = (id: string, e: DocEntry): void => {
    state.docs.set(id, e)
    const table = tableOf(id)
    const t = state.tables.get(table) ?? state.tables.set(table, {ids: new Set()}).get(table)!
    t.ids.add(id)
  }
  await gitStream(repo, ['ls-tree', '-r', '-z', commit], (chunk) => {
    const parts = (rest + chunk.toString('utf8')).split('\0')
    rest = parts.pop() ?? ''
    for (const line of parts) {
      // <mode> SP <type> SP <sha> TAB <path>
      const tab = line.indexOf('\t')
      const path = line.slice(tab + 1)
      const kind = classifyPath(path)
      if (kind === undefined) continue
      const sha = line.slice(tab - 40, tab)
      if (kind.kind === 'doc') {
        // Written before long keys got hashed names: keep updating the file where it is.
        const long = path.length - path.lastIndexOf('/') - 1 > MAX_FILE_NAME
        // A flag rather than the path: a million documents of an old repository would otherwise hold a million strings.
        add(kind.id, long ? {path: flat(path), seq: 0, sha} : isLegacyPath(path) ? {legacy: true, seq: 0, sha} : {seq: 0, sha})
      } else if (kind.kind === 'hashed') hashed.push({path, sha})
      else markers.push(kind)
    }
  })
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
      add(id, isLegacyPath(h.path) ? {legacy: true, seq: 0, sha: h.sha} : {seq: 0, sha: h.sha})
    }
  }
  for (const m of markers) {
    const c = classifyPath(m.docPath)
    const id = c?.kind === 'doc' ? c.id : byPath.get(m.docPath)
    const e = id === undefined ? undefined : state.docs.get(id)
    if (!id || !e) continue
    // Entries loaded here are this branch's own, so setting the expiry in place is safe.
    e.expiresAt = m.at
    state.expiring.add(id)
    onExpiry(id, m.at)
  }
}

/** Where the current version of a document is (or goes): where it already is, else docPath. */
export function entryPath(p: ParsedId, e: DocEntry | undefined): string {
  return e?.path ?? (e?.legacy ? legacyDocPath(p) : docPath(p))
}

/** A copy that does not keep the whole `ls-tree` chunk it was sliced from alive. */
function flat(s: string): string {
  return Buffer.from(s).toString()
}
