/**
 * The pack writer's work, apart from the thread it runs on: turns each commit record into the
 * objects fast-import would make for it (the blob, every tree on the changed paths, the commit),
 * appends them to the open pack, and at a checkpoint finishes the pack and moves the refs.
 * Object ids are exactly fast-import's for the same command stream (test/pack-writer.test.ts).
 */
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'

import {spanDelta} from './delta.js'
import {idOfScratch, keyHex, OBJ_BLOB, OBJ_COMMIT, OBJ_TREE, type ObjectKey, objectKey, objectScratch, PackFile, removeStaleTemps} from './pack-file.js'
import {REC_BRANCH, REC_CHECKPOINT, REC_COMMIT, REC_RESTART, type WriterRecord} from './protocol.js'
import {entrySize, fold, keepRaw, MODE_DIR, MODE_FILE, missingOnPath, parseTree, removePath, serializeInto, setPath, type TreeEntry, TreeNode, unfold} from './tree.js'
import {PackReader} from './pack-reader.js'
import {TREE_CACHE_BYTES, TreeCache} from './tree-cache.js'
import {Deflater} from './zlib-stream.js'

/** Longest delta chain a tree gets before it is written whole again (git's default pack depth). */
const MAX_DEPTH = 50

interface BranchTip {
  /** Unset for a branch with no commit yet. */
  commit: ObjectKey | undefined
  root: TreeEntry
}

export interface BuilderStats {
  commits: number
  objects: number
  packBytes: number
  packs: number
  treeDeltas: number
  treeLoads: number
  /** Folded trees parsed again from their bytes (no pack read). */
  treeUnfolds: number
  /** The tree cache's estimated size after the last checkpoint (bytes). */
  treeCacheBytes: number
}

export class PackBuilder {
  private readonly branches = new Map<string, BranchTip>()
  /** Branches moved since the last checkpoint. */
  private readonly moved = new Set<string>()
  private readonly reader: PackReader
  private readonly deflater = new Deflater()
  private readonly packDir: string
  private pack: PackFile | undefined
  /** Which pack a tree's `written` version is in: deltas only ever point inside the open one. */
  private gen = 0
  readonly stats: BuilderStats = {commits: 0, objects: 0, packBytes: 0, packs: 0, treeCacheBytes: 0, treeDeltas: 0, treeLoads: 0, treeUnfolds: 0}
  private readonly cache: TreeCache
  /** Nodes parsed or written since the last checkpoint: their delta bases are let go there, and any leaf still parsed folded. */
  private readonly expanded = new Set<TreeNode>()

  constructor(
    private readonly repo: string,
    private readonly env: NodeJS.ProcessEnv,
    treeCacheBytes = TREE_CACHE_BYTES,
  ) {
    this.cache = new TreeCache(treeCacheBytes)
    this.packDir = join(repo, 'objects', 'pack')
    // Only one writer runs per repository (the engine's instance lock): a temporary pack here is a dead writer's.
    removeStaleTemps(this.packDir)
    this.reader = new PackReader(repo, env)
  }

  /**
   * Applies a commit or a branch creation at once (trees it has not in memory are read from the
   * repository's files on the way); false for a checkpoint or restart: `apply` it instead.
   */
  applyNow(r: WriterRecord): boolean {
    if (r.type === REC_COMMIT) {
      const t = this.tip(r.branch, r.fromRef)
      for (const f of r.files) {
        const path = latin1Path(f.path)
        for (let m = missingOnPath(t.root, path); m; m = missingOnPath(t.root, path)) this.load(m)
      }
      this.writeCommit(t, r)
      return true
    }
    if (r.type === REC_BRANCH) {
      const src = this.tip(r.from, r.fromRef)
      this.branches.set(r.name, {commit: src.commit, root: copyTree(src.root)})
      this.moved.add(r.name)
      return true
    }
    return false
  }

  /** Applies one record: its objects are in the open pack (or its checkpoint is done) when this returns. */
  apply(r: WriterRecord): void {
    if (this.applyNow(r)) return
    if (r.type === REC_CHECKPOINT) this.checkpoint()
    else if (r.type === REC_RESTART) this.restart()
  }

  private tip(branch: string, fromRef: boolean): BranchTip {
    let t = this.branches.get(branch)
    if (t) return t
    if (fromRef) {
      const id = this.reader.branchTip(branch)
      const c = id === undefined ? undefined : this.reader.read(Buffer.from(id, 'hex').toString('latin1'))
      if (!c || c.type !== 'commit') throw new Error(`not a valid object name refs/heads/${branch}^0`)
      const tree = /^tree ([0-9a-f]{40})/.exec(c.data.toString('latin1', 0, 46))
      if (!tree) throw new Error(`commit ${id} has no tree`)
      t = {commit: Buffer.from(id!, 'hex').toString('latin1'), root: {id: Buffer.from(tree[1], 'hex').toString('latin1'), mode: MODE_DIR, name: ''}}
    } else t = {commit: undefined, root: {id: undefined, mode: MODE_DIR, name: '', node: new TreeNode([])}}
    this.branches.set(branch, t)
    return t
  }

  private load(e: TreeEntry): void {
    if (e.node?.raw && !e.node.entries) {
      unfold(e.node)
      e.node.used = this.gen
      this.stats.treeUnfolds++
      this.cache.written(e.node)
      this.expanded.add(e.node)
      return
    }
    const o = this.reader.read(e.id!)
    if (!o || o.type !== 'tree') throw new Error(`tree ${keyHex(e.id!)} is missing from the repository`)
    e.node = new TreeNode(parseTree(o.data), o.data)
    e.node.used = this.gen
    this.stats.treeLoads++
    this.cache.loaded(e.node)
    this.expanded.add(e.node)
  }

  /** The commit's objects into the open pack; every tree on its paths is in memory. */
  private writeCommit(t: BranchTip, r: Extract<WriterRecord, {type: typeof REC_COMMIT}>): void {
    const pack = this.open()
    for (const f of r.files) {
      const path = latin1Path(f.path)
      if (f.content === undefined) removePath(t.root, path, 0)
      else setPath(t.root, path, 0, this.blob(pack, f.content), MODE_FILE)
    }
    const tree = this.writeTree(t.root, pack)
    const head = `tree ${keyHex(tree)}\n${t.commit ? `parent ${keyHex(t.commit)}\n` : ''}author ${r.author}\ncommitter ${r.committer}\n\n`
    const headBytes = Buffer.byteLength(head)
    const size = headBytes + r.message.length
    const {at, buf} = objectScratch(OBJ_COMMIT, size)
    buf.write(head, at)
    buf.set(r.message, at + headBytes)
    const id = idOfScratch(at + size)
    pack.addDeflated(OBJ_COMMIT, id, buf.subarray(at, at + size), this.deflater)
    this.stats.objects++
    this.stats.commits++
    t.commit = id
    this.moved.add(r.branch)
  }

  private blob(pack: PackFile, content: Buffer): ObjectKey {
    const id = objectKey(OBJ_BLOB, content)
    if (pack.offsetOf(id) === -1) {
      pack.addDeflated(OBJ_BLOB, id, content, this.deflater)
      this.stats.objects++
    }
    return id
  }

  /** Writes `e`'s tree and every changed tree below it; returns its id. */
  private writeTree(e: TreeEntry, pack: PackFile): ObjectKey {
    if (e.id) return e.id
    const node = e.node!
    node.used = this.gen
    const entries = node.entries!
    let size = 0
    for (const c of entries) {
      if (!c.id) this.writeTree(c, pack)
      size += entrySize(c)
    }
    // The children are written: the scratch buffer is this tree's now.
    const {at, buf} = objectScratch(OBJ_TREE, size)
    const end = serializeInto(node, buf, at)
    const id = idOfScratch(end)
    const bytes = buf.subarray(at, end)
    e.id = id
    // Into the pack before keepRaw, which may overwrite the old version in place: the delta's base.
    const w = node.written
    let written: TreeNode['written']
    if (pack.offsetOf(id) !== -1) {
      // The same tree again (a change undone): one copy per pack. Its chain depth is unknown here, so it is no base.
      written = undefined
    } else if (w && w.gen === this.gen && w.depth < MAX_DEPTH) {
      written = {depth: w.depth + 1, gen: this.gen, offset: pack.addDelta(id, w.offset, spanDelta(w.raw, bytes)), raw: w.raw}
      this.stats.treeDeltas++
      this.stats.objects++
    } else {
      written = {depth: 0, gen: this.gen, offset: pack.addStored(OBJ_TREE, id, bytes), raw: w?.raw ?? bytes}
      this.stats.objects++
    }
    keepRaw(node, bytes)
    if (written) written.raw = node.raw!
    node.written = written
    // A leaf is kept as its bytes from here on (tree.ts `fold`); `written` still makes it a delta base in this pack.
    fold(node)
    this.cache.written(node)
    this.expanded.add(node)
    return id
  }

  private open(): PackFile {
    this.pack ??= new PackFile(this.packDir)
    return this.pack
  }

  /** Finishes the open pack (fsynced, renamed into objects/pack) and then moves the refs of every branch written since the last one. */
  checkpoint(): void {
    if (this.pack) {
      const pack = this.pack
      this.pack = undefined
      this.gen++
      this.stats.packBytes += pack.bytes + 20
      if (pack.finish() !== undefined) this.stats.packs++
    }
    const updates: string[] = []
    for (const b of this.moved) {
      const c = this.branches.get(b)?.commit
      if (c) updates.push(`update refs/heads/${b} ${keyHex(c)}\n`)
    }
    this.moved.clear()
    if (updates.length > 0) updateRefs(this.repo, this.env, updates.join(''))
    // Packs a roll-up merged away are let go (their space freed), the new ones found.
    this.reader.refresh()
    // Leaves parsed but left unchanged are folded too, and no tree's version in the finished pack is a delta base any more.
    for (const n of this.expanded) {
      if (!n.entries || fold(n)) this.cache.written(n)
      n.written = undefined
    }
    this.expanded.clear()
    // Every tree is in a finished pack now: any of them may be dropped and read again later.
    this.cache.checkpointed([...this.branches.values()].map((t) => t.root))
    this.stats.treeCacheBytes = this.cache.bytes
  }

  /** fast-import's restart (before a roll-up): only a checkpoint here, the tree cache bounds the memory. */
  private restart(): void {
    this.checkpoint()
  }

  /** Ends without a checkpoint: the open pack's temporary file is removed, refs stay where the last checkpoint put them. */
  abort(): void {
    this.pack?.abort()
    this.pack = undefined
    this.reader.close()
    this.deflater.close()
  }

  close(): void {
    this.reader.close()
    this.deflater.close()
  }
}

/** Paths are ASCII (ids.ts encodes the rest); any other byte is kept as git stores it, one latin1 unit per byte. */
function latin1Path(p: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\u0000-\u007f]*$/.test(p) ? p : Buffer.from(p, 'utf8').toString('latin1')
}

/** A branch's own copy of the loaded part of a tree (a new branch must not change its source's nodes). */
function copyTree(e: TreeEntry): TreeEntry {
  // Both branches' nodes share the bytes from here on: neither may overwrite them (keepRaw).
  if (e.node) e.node.owned = false
  // A folded node is copied as its bytes.
  if (e.node?.raw && !e.node.entries) return {at: e.at, id: e.id, mode: e.mode, name: e.name, node: new TreeNode(undefined, e.node.raw)}
  if (!e.node?.entries) return {at: e.at, id: e.id, mode: e.mode, name: e.name}
  return {at: e.at, id: e.id, mode: e.mode, name: e.name, node: new TreeNode(e.node.entries.map(copyTree), e.node.raw)}
}

/**
 * Moves the refs in one `git update-ref --stdin` transaction, waited for on this thread (the
 * records after a checkpoint wait for it anyway), so the process is reaped before this returns:
 * a worker terminated from outside leaves no child behind.
 */
function updateRefs(repo: string, env: NodeJS.ProcessEnv, input: string): void {
  const r = spawnSync('git', ['-C', repo, 'update-ref', '--stdin'], {encoding: 'utf8', env, input})
  if (r.error) throw r.error
  if (r.status !== 0) throw new Error(`git update-ref exited (${r.status ?? r.signal}): ${r.stderr.trim()}`)
}
