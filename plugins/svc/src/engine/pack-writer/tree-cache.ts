/**
 * Bounds the trees the pack writer keeps in memory. Each branch's tree is held as far as writes
 * loaded or changed it; at a million documents that is ~65,000 leaf trees and a million entries
 * (~150 MB), which fast-import's restarts used to drop and nothing else did. At a checkpoint every
 * tree is in a finished pack, so any loaded subtree can be dropped (its entry keeps the id) and
 * read again from the pack when a write next needs it (pack-reader.ts). Once the estimate passes
 * the budget, the least recently used nodes go, deepest first, until it is back under 3/4 of it.
 */
import type {TreeEntry, TreeNode} from './tree.js'

/**
 * The default budget (bytes, estimated). With leaves held as entry objects it was all of a
 * 1M-document table's trees; at 64 MiB (~40% of its leaves) the 1M run read evicted leaves back
 * from the packs: 3,981 writes/s against 5,291 (docs/benchmarks.md, "Integration of the
 * thirteenth session"). Leaves are folded to their bytes now (tree.ts `fold`): a 1M table's trees
 * are ~85 MB estimated, so this holds about two million documents' (docs/benchmarks.md, "The pack
 * writer's thread and the loop's GC at 1M").
 */
export const TREE_CACHE_BYTES = 192 * 1024 * 1024
/**
 * An entry's JavaScript object with its name and id strings, and a node's objects (entries array,
 * its own Buffer, the delta base record), roughly (V8, 64-bit). Calibrated on 300k documents of
 * one table kept whole: the process's RSS grew ~1.7x this estimate (the heap's own slack).
 */
const ENTRY_BYTES = 250
/** A folded leaf (no entry objects) counts this plus its bytes: its node, Buffer and backing store. */
const NODE_BYTES = 400

export const nodeBytes = (n: TreeNode): number => NODE_BYTES + (n.raw?.length ?? 0) + (n.entries?.length ?? 0) * ENTRY_BYTES

export class TreeCache {
  /** The last measure plus what was loaded and written since (a directory a delete removed stays counted until the next measure). */
  bytes = 0

  constructor(private readonly budget: number) {}

  loaded(n: TreeNode): void {
    n.counted = nodeBytes(n)
    this.bytes += n.counted
  }

  /** A node was written (new, or changed since it was last counted). */
  written(n: TreeNode): void {
    const now = nodeBytes(n)
    this.bytes += now - n.counted
    n.counted = now
  }

  /** After a checkpoint (every tree written and in a finished pack): over budget, measures and drops the least recently used. */
  checkpointed(roots: TreeEntry[]): void {
    if (this.bytes <= this.budget) return
    const nodes: Array<{depth: number; entry: TreeEntry}> = []
    let total = 0
    const walk = (e: TreeEntry, depth: number): void => {
      const n = e.node
      // A folded node (bytes only, tree.ts `fold`) is counted and may go; it has no children loaded.
      if (!n || (!n.entries && !n.raw)) return
      n.counted = nodeBytes(n)
      total += n.counted
      if (depth > 0) nodes.push({depth, entry: e})
      if (n.entries) for (const c of n.entries) if (c.node) walk(c, depth + 1)
    }
    for (const r of roots) walk(r, 0)
    this.bytes = total
    if (total <= this.budget) return
    // Least recently used first; among equals the deepest (a parent goes after its children, or with them).
    nodes.sort((a, b) => a.entry.node!.used - b.entry.node!.used || b.depth - a.depth)
    const target = (this.budget * 3) / 4
    for (const {entry} of nodes) {
      if (this.bytes <= target) break
      const n = entry.node
      // The id is what the entry is read back by (every entry has one at a checkpoint).
      if (!n || entry.id === undefined) continue
      this.bytes -= n.counted
      entry.node = undefined
    }
  }
}
