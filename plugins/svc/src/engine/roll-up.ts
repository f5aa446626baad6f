/**
 * The background roll-up: the packs `git repack -d --geometric=2` would merge, merged by listing
 * their objects from their indexes and handing the list to `git pack-objects --window=0`.
 *
 * Why not `git repack --geometric`: it runs `pack-objects --stdin-packs`, which walks every
 * commit's trees to name the objects (for the delta search's ordering). With no delta search
 * (window 0: fast-import's own deltas are reused as they are, the search is left to `compact`) the
 * names serve nothing, and that walk was 60% of the roll-up's CPU (docs/benchmarks.md, "svc
 * sustained writes at 1M: the roll-up by object list"). Given the names instead, pack-objects only
 * copies each object's bytes: the result is the pack repack would write, in another order.
 *
 * Safety is git repack's: only packs without a `.keep` are touched (fast-import's live packs have
 * one), the new pack is complete (its index renamed into place last, the directory synced) before
 * any merged pack is removed, and loose objects are removed by `git prune-packed` only once a
 * pack holds them. A crash at any step leaves either the old packs, or both (duplicates, merged
 * by the next roll-up), or `tmp_*` files that the next start removes (lock.ts); never a missing object.
 */
import {chmod, open, readdir, rename, stat, unlink} from 'node:fs/promises'
import {join} from 'node:path'

import {git} from './git.js'
import {idxObjectCount} from './pack-index.js'

/** repack's `--geometric=2`: each pack left at least twice as large as all the smaller ones together. */
const FACTOR = 2
/** pack-objects' base name: its output is renamed to `pack-<hash>.*`; a crash's leftovers start with `tmp_`, which the next start removes. */
const TMP_BASE = 'tmp_rollup'
/** What git repack removes of a merged pack, in its order (packfile.c unlink_pack_path): the `.pack` first. */
const PACK_FILES = ['.pack', '.idx', '.rev', '.keep', '.bitmap', '.promisor', '.mtimes']

export interface PackInfo {
  /** `pack-<hash>`, without extension. */
  name: string
  objects: number
}

export interface RollUpResult {
  /** Loose objects packed. */
  loose: number
  /** The packs merged (their names). */
  merged: string[]
  /** The new pack's name, when one was written. */
  pack?: string
}

/**
 * How many of the packs (sorted by object count, ascending) `git repack --geometric` merges:
 * builtin/repack.c split_pack_geometry, git 2.39. The largest packs that already form a
 * progression of factor 2 stay; the rest merge, and any pack the merged one would then come
 * within a factor of joins it.
 */
export function geometricSplit(counts: number[], factor = FACTOR): number {
  if (counts.length === 0) return 0
  let i = counts.length - 1
  for (; i > 0; i--) if (counts[i] < factor * counts[i - 1]) break
  let split = i === 0 ? 0 : i + 1
  let total = 0
  for (let j = 0; j < split; j++) total += counts[j]
  for (let j = split; j < counts.length; j++) {
    if (counts[j] >= factor * total) break
    split++
    total += counts[j]
  }
  return split
}

/** The packs a roll-up may merge: complete (`.pack` and `.idx`), not kept, not cruft or promisor packs. */
export async function mergeablePacks(packDir: string): Promise<PackInfo[]> {
  let files: string[]
  try {
    files = await readdir(packDir)
  } catch {
    return []
  }
  const present = new Set(files)
  const out: PackInfo[] = []
  for (const f of files) {
    if (!f.startsWith('pack-') || !f.endsWith('.idx')) continue
    const name = f.slice(0, -4)
    if (!present.has(`${name}.pack`) || present.has(`${name}.keep`) || present.has(`${name}.mtimes`) || present.has(`${name}.promisor`)) continue
    out.push({name, objects: await idxObjectCount(join(packDir, f))})
  }
  // Ties by name: the same directory always gives the same choice.
  return out.sort((a, b) => a.objects - b.objects || (a.name < b.name ? -1 : 1))
}

/** Loose objects' names (`objects/xx/yyyy...`). */
export async function looseObjects(objectsDir: string): Promise<string[]> {
  const out: string[] = []
  for (let i = 0; i < 256; i++) {
    const dir = i.toString(16).padStart(2, '0')
    let names: string[]
    try {
      names = await readdir(join(objectsDir, dir))
    } catch {
      continue
    }
    // Skips git's tmp_obj_* files (an object being written).
    for (const n of names) if (/^[0-9a-f]{38}$/.test(n)) out.push(dir + n)
  }
  return out
}

/**
 * One roll-up at the background priority. Resolves with what it merged (nothing when the packs
 * already form the progression and no object is loose). The caller keeps roll-ups, `compact` and
 * fast-import restarts from overlapping (engine.ts, the repack slot).
 */
export async function rollUp(repo: string): Promise<RollUpResult> {
  const objectsDir = join(repo, 'objects')
  const packDir = join(objectsDir, 'pack')
  const packs = await mergeablePacks(packDir)
  const chosen = packs.slice(0, geometricSplit(packs.map((p) => p.objects)))
  const loose = await looseObjects(objectsDir)
  // One pack and nothing loose: rewriting it would give the same pack (git repack rewrites it).
  if (chosen.length < 2 && loose.length === 0) return {loose: 0, merged: []}
  const {stdout} = await git(repo, ['pack-objects', '-q', '--non-empty', '--delta-base-offset', '--window=0', join(packDir, TMP_BASE)], {
    background: true,
    idx: chosen.map((p) => join(packDir, `${p.name}.idx`)),
    input: loose.map((n) => `${n}\n`).join(''),
  })
  const hash = stdout.trim()
  if (!/^[0-9a-f]{40,64}$/.test(hash)) throw new Error(`git pack-objects printed no pack name: ${stdout.slice(0, 100)}`)
  const pack = `pack-${hash}`
  await install(packDir, `${TMP_BASE}-${hash}`, pack)
  await syncDir(packDir)
  const merged = chosen.map((p) => p.name).filter((n) => n !== pack)
  // A multi-pack index naming a removed pack would send readers to it (git repack clears it too); svc writes none.
  if (merged.length > 0) await removeIfPresent(join(packDir, 'multi-pack-index'))
  for (const name of merged) for (const ext of PACK_FILES) await removeIfPresent(join(packDir, name + ext))
  if (loose.length > 0) await git(repo, ['prune-packed', '-q'], {background: true})
  return {loose: loose.length, merged, pack}
}

/**
 * Renames pack-objects' output into place as git repack does: read-only, the `.idx` last (readers
 * find packs by their index, so the pack is whole before it is seen). A pack of that name already
 * present holds the same objects: the new files are dropped instead.
 */
async function install(packDir: string, from: string, to: string): Promise<void> {
  const exists = await stat(join(packDir, `${to}.idx`)).then(
    () => true,
    () => false,
  )
  for (const ext of ['.pack', '.rev', '.idx']) {
    const src = join(packDir, from + ext)
    if (exists) {
      await removeIfPresent(src)
      continue
    }
    let mode: number
    try {
      mode = (await stat(src)).mode
    } catch (error) {
      if (ext === '.rev') continue
      throw error
    }
    await chmod(src, mode & ~0o222)
    await rename(src, join(packDir, to + ext))
  }
}

/** The renames reach the disk before any merged pack is removed: a power cut cannot leave neither. */
async function syncDir(dir: string): Promise<void> {
  // Windows opens no directory as a file; its renames are journaled by NTFS.
  if (process.platform === 'win32') return
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

async function removeIfPresent(path: string): Promise<void> {
  try {
    await unlink(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}
