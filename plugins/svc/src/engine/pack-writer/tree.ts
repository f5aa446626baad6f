/**
 * The writer's picture of a branch's tree: nodes loaded from the repository on first use, changed
 * in place by each commit, and written (bottom-up, changed nodes only) as fast-import writes them:
 * entries in git's order (a directory sorts as its name plus `/`), modes as octal without a
 * leading zero, a directory emptied by a delete removed from its parent, and an unchanged path
 * (the same blob again, a delete of a missing file) leaving every tree id as it was.
 */
export const MODE_FILE = 0o100644
export const MODE_DIR = 0o40000

export interface TreeEntry {
  /** The name as bytes in a latin1 string, so string order is git's byte order. */
  name: string
  mode: number
  /** The object id (20 bytes as latin1); undefined while `node` holds changes not yet written. */
  id: string | undefined
  /** The directory's content once loaded or created here. */
  node?: TreeNode
  /** Where the entry's bytes (`<mode> <name>\0<id>`) start in its tree's `raw`; unset once changed. */
  at?: number
}

/** Where the node's last written version sits in the open pack: the base for its next delta. */
export interface WrittenVersion {
  depth: number
  gen: number
  offset: number
  raw: Buffer
}

export class TreeNode {
  /**
   * Undefined until loaded (the entry's id says which tree to load), or while folded: `raw` then
   * holds the tree's bytes and `unfold` parses them again, with no read from the packs.
   */
  entries: TreeEntry[] | undefined
  /** The tree's last serialized content: the unchanged entries' bytes are copied from it in runs. */
  raw: Buffer | undefined
  written: WrittenVersion | undefined
  /** The checkpoint generation it was last loaded or changed in: the tree cache drops the least recent first (tree-cache.ts). */
  used = 0
  /** Bytes the tree cache counts for it (tree-cache.ts), so a rewrite adds only its difference. */
  counted = 0
  /**
   * `raw` was allocated for this node and is shared with nothing (no branch's copy, no reader's
   * cache), so a rewrite of the same size may overwrite it (`keepRaw`).
   */
  owned = false

  constructor(entries?: TreeEntry[], raw?: Buffer) {
    this.entries = entries
    this.raw = raw
  }
}

/**
 * Drops a serialized leaf's entry objects and keeps only its bytes (`raw`). Why (issue 26, 1M
 * documents): a tree held as entry objects costs its thread's heap ~150 bytes per document
 * (an object, its name and id strings), ~1M objects that every major GC marks and that pushed
 * the tree cache over its budget, so that evicted leaves were read back from the packs; the bytes
 * are a sixth of that and off the heap. Folded as soon as it is written, the parsed entries die
 * young instead of being copied by each scavenge until the next checkpoint and then promoted.
 * Only a tree none of whose entries has a node of its own (a leaf, in svc's layout) is folded:
 * a parent's entries hold its children's nodes. Returns whether it folded.
 */
export function fold(node: TreeNode): boolean {
  const entries = node.entries
  if (!entries || !node.raw) return false
  for (const e of entries) if (e.node !== undefined || e.at === undefined || e.id === undefined) return false
  node.entries = undefined
  return true
}

/** A folded node's entries parsed again from its bytes. */
export function unfold(node: TreeNode): void {
  node.entries = parseTree(node.raw!)
}

const isDir = (mode: number): boolean => (mode & 0o170000) === MODE_DIR

/** Git's base_name_compare: bytes, then a directory's implicit `/` against the other name's next byte. */
export function compareEntries(aName: string, aMode: number, bName: string, bMode: number): number {
  const len = Math.min(aName.length, bName.length)
  for (let i = 0; i < len; i++) {
    const d = aName.charCodeAt(i) - bName.charCodeAt(i)
    if (d !== 0) return d
  }
  const c1 = aName.length > len ? aName.charCodeAt(len) : isDir(aMode) ? 47 : 0
  const c2 = bName.length > len ? bName.charCodeAt(len) : isDir(bMode) ? 47 : 0
  return c1 - c2
}

/**
 * The tree's entries. The bytes become one latin1 string first and the names and ids slices of
 * it: a `toString` per name and per id (two native calls an entry) took 5 us for a 16-entry
 * leaf, which at 1M documents every write parses again (tree.ts `fold`); this takes under 1.
 */
export function parseTree(raw: Buffer): TreeEntry[] {
  const out: TreeEntry[] = []
  const s = raw.toString('latin1')
  let at = 0
  while (at < s.length) {
    const sp = s.indexOf(' ', at)
    const nul = s.indexOf('\0', sp)
    if (sp === -1 || nul === -1 || nul + 21 > s.length) throw new Error('malformed tree object')
    const text = s.slice(at, sp)
    const mode = text === '100644' ? MODE_FILE : text === '40000' ? MODE_DIR : Number.parseInt(text, 8)
    // A mode written another way (`040000`) is rewritten as fast-import would: not copied as it was.
    const canonical = modeText(mode) === text
    out.push({at: canonical ? at : undefined, id: s.slice(nul + 1, nul + 21), mode, name: s.slice(sp + 1, nul)})
    at = nul + 21
  }
  return out
}

/** `<mode> <name>\0`: the entry's bytes before its id. */
export function entryHead(e: TreeEntry): string {
  return `${modeText(e.mode)} ${e.name}\0`
}

/** Bytes of the entry in its tree. */
export function entrySize(e: TreeEntry): number {
  // The two modes svc writes without the mode table's lookup: this runs for every entry of every tree written.
  const mode = e.mode
  return (mode === MODE_FILE ? 6 : mode === MODE_DIR ? 5 : modeText(mode).length) + 22 + e.name.length
}

/**
 * Serializes `node`'s entries into `out` at `at` (room for their total size); unchanged entries
 * are copied from the previous content a run at a time. Returns the end; the entries' offsets
 * then describe the new content, which `keepRaw` makes `node.raw` (the old one is still there
 * until then: the base of the new version's delta).
 */
export function serializeInto(node: TreeNode, out: Buffer, at: number): number {
  const entries = node.entries!
  const old = node.raw
  let i = 0
  while (i < entries.length) {
    const e = entries[i]
    if (old && e.at !== undefined) {
      const from = e.at
      let to = from + entrySize(e)
      let j = i + 1
      while (j < entries.length && entries[j].at === to) to += entrySize(entries[j++])
      old.copy(out, at, from, to)
      at += to - from
      i = j
      continue
    }
    if (e.id === undefined) throw new Error(`tree entry ${e.name} has no id`)
    at += out.write(entryHead(e) + e.id, at, 'latin1')
    i++
  }
  let pos = 0
  for (const e of entries) {
    e.at = pos
    pos += entrySize(e)
  }
  return at
}

/**
 * Makes `bytes` (what serializeInto wrote) the node's `raw`: copied over the old one when it is
 * the node's own and of the same size (a rewrite that changed ids only, as every tree above a
 * changed document is: most trees of most commits), else into a new buffer. A buffer of its
 * own, not a slice of Node's 8 KiB pool: a tree kept for long would hold a whole pool slab
 * alive, and the cache's leaf trees, each the last one alive of its slab, held ~150 MB per 100k
 * writes beyond the cache's estimate.
 */
export function keepRaw(node: TreeNode, bytes: Buffer): void {
  const old = node.raw
  if (node.owned && old && old.length === bytes.length) {
    bytes.copy(old)
    return
  }
  const raw = Buffer.allocUnsafeSlow(bytes.length)
  bytes.copy(raw)
  node.raw = raw
  node.owned = true
}

/** The entry's id is about to change (its directory changed below it). */
function touch(e: TreeEntry): void {
  e.id = undefined
  e.at = undefined
}

const MODE_TEXT = new Map<number, string>()
function modeText(mode: number): string {
  let t = MODE_TEXT.get(mode)
  if (t === undefined) MODE_TEXT.set(mode, (t = mode.toString(8)))
  return t
}

/** Index of `name` in sorted `entries` (either kind), or -(insertion point) - 1 for a new entry of `mode`. */
function find(entries: TreeEntry[], name: string, mode: number): number {
  // Small trees (16 entries in svc's layout): a scan by name finds an entry whatever its kind.
  for (let i = 0; i < entries.length; i++) if (entries[i].name === name) return i
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareEntries(entries[mid].name, entries[mid].mode, name, mode) < 0) lo = mid + 1
    else hi = mid
  }
  return -lo - 1
}

/** A directory node not loaded yet on the way down: the caller loads `entry` and tries again. */
export class NeedTree {
  constructor(readonly entry: TreeEntry) {}
}

/**
 * The first directory on `path`'s way that is not loaded, or undefined when the whole way is in
 * memory (a path under a file or a missing directory needs nothing loaded below that point).
 */
export function missingOnPath(root: TreeEntry, path: string): TreeEntry | undefined {
  let cur = root
  let from = 0
  for (;;) {
    if (!cur.node?.entries) return cur
    const slash = path.indexOf('/', from)
    if (slash === -1) return undefined
    const name = path.slice(from, slash)
    const i = find(cur.node.entries, name, MODE_DIR)
    if (i < 0 || !isDir(cur.node.entries[i].mode)) return undefined
    cur = cur.node.entries[i]
    from = slash + 1
  }
}

/** Sets `path` to a blob; returns whether anything changed (fast-import's tree_content_set). */
export function setPath(dir: TreeEntry, path: string, from: number, id: string, mode: number): boolean {
  const entries = dir.node?.entries
  if (!entries) throw new NeedTree(dir)
  const slash = path.indexOf('/', from)
  const name = slash === -1 ? path.slice(from) : path.slice(from, slash)
  let i = find(entries, name, slash === -1 ? mode : MODE_DIR)
  if (slash === -1) {
    if (i >= 0) {
      const e = entries[i]
      if (e.mode === mode && e.id === id) return false
      if (e.mode !== mode && compareEntries(e.name, e.mode, name, mode) !== 0) {
        // A directory replaced by a file (or the other way) sorts elsewhere.
        entries.splice(i, 1)
        i = find(entries, name, mode)
      } else {
        entries[i] = {id, mode, name}
        touch(dir)
        return true
      }
    }
    entries.splice(-i - 1, 0, {id, mode, name})
    touch(dir)
    return true
  }
  if (i >= 0 && !isDir(entries[i].mode)) {
    // A file where a directory is wanted: replaced by a new, empty directory.
    entries.splice(i, 1)
    i = find(entries, name, MODE_DIR)
  }
  let sub: TreeEntry
  if (i >= 0) sub = entries[i]
  else {
    sub = {id: undefined, mode: MODE_DIR, name, node: new TreeNode([])}
    entries.splice(-i - 1, 0, sub)
  }
  if (!setPath(sub, path, slash + 1, id, mode)) return false
  touch(dir)
  return true
}

/** Removes `path`; an emptied directory goes too. Returns whether anything changed (tree_content_remove). */
export function removePath(dir: TreeEntry, path: string, from: number): boolean {
  const entries = dir.node?.entries
  if (!entries) throw new NeedTree(dir)
  const slash = path.indexOf('/', from)
  const name = slash === -1 ? path.slice(from) : path.slice(from, slash)
  const i = find(entries, name, MODE_DIR)
  if (i < 0) return false
  const e = entries[i]
  if (slash !== -1) {
    // A file in the way: the path cannot exist below it.
    if (!isDir(e.mode)) return false
    if (!removePath(e, path, slash + 1)) return false
    if (e.node!.entries!.length > 0) {
      touch(dir)
      return true
    }
  }
  entries.splice(i, 1)
  touch(dir)
  return true
}
