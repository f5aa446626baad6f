/**
 * What a clean close of a branch's full-text index left behind, so the next open can trust it
 * without reading it all again. At 1M documents the open's page check (`quick_check`, fts/check.ts)
 * took ~4.5 s of a core and the walk of every row against the branch ~2.3 s of the event loop,
 * both beside the first requests after a restart (issue 26), for an index the last process had
 * closed in line with the branch.
 *
 * The marker names the index file as it was when closed (size, inode, modification and change
 * times: any later write to it, a copy or a restore changes one of them; the change time cannot be
 * set back) and the branch head the index matched. It is deleted, durably, before the index is
 * opened again, so a process that stops without closing leaves none: a crash is always followed by
 * the full check. The hourly consistency check is not affected.
 */
import {closeSync, fsyncSync, openSync, readFileSync, rmSync, statSync, writeSync} from 'node:fs'
import {dirname, join} from 'node:path'

/** The marker's name, beside the index file in the branch's index folder (engine/layout.ts). */
export const CLEAN_FILE = 'fts.clean'

interface Marker {
  ctimeNs: string
  /** Documents the index held, as many as the branch had. */
  documents: number
  /** The branch's head commit the index matched exactly. */
  head: string
  ino: string
  mtimeNs: string
  size: string
  version: 1
}

/** What an open may skip: the page check (`file`: unchanged since a clean close), and the walk (`head`: it matched this commit). */
export interface CleanState {
  documents: number
  head: string
}

function identity(file: string): Pick<Marker, 'ctimeNs' | 'ino' | 'mtimeNs' | 'size'> | undefined {
  try {
    const s = statSync(file, {bigint: true})
    return {ctimeNs: String(s.ctimeNs), ino: String(s.ino), mtimeNs: String(s.mtimeNs), size: String(s.size)}
  } catch {
    return undefined
  }
}

/**
 * Takes the marker of `file`'s clean close, if any: deletes it (durably) and answers what it said
 * when the file is still exactly as closed, with no write-ahead log left beside it.
 */
export function takeCleanClose(file: string): CleanState | undefined {
  const marker = join(dirname(file), CLEAN_FILE)
  let m: Marker | undefined
  try {
    m = JSON.parse(readFileSync(marker, 'utf8')) as Marker
  } catch {
    // none (or a torn one): the full check
    return undefined
  }
  const now = identity(file)
  const wal = identity(`${file}-wal`)
  rmSync(marker, {force: true})
  syncDir(dirname(file))
  if (m?.version !== 1 || typeof m.head !== 'string' || !Number.isSafeInteger(m.documents) || now === undefined) return undefined
  if (wal !== undefined && wal.size !== '0') return undefined
  if (now.size !== m.size || now.ino !== m.ino || now.mtimeNs !== m.mtimeNs || now.ctimeNs !== m.ctimeNs) return undefined
  return {documents: m.documents, head: m.head}
}

/** Records that `file` (closed) holds exactly the `documents` of the branch at commit `head`. */
export function markCleanClose(file: string, head: string, documents: number): void {
  const id = identity(file)
  if (id === undefined) return
  const marker: Marker = {...id, documents, head, version: 1}
  const fd = openSync(join(dirname(file), CLEAN_FILE), 'w')
  try {
    writeSync(fd, JSON.stringify(marker))
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  syncDir(dirname(file))
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch {
    // a file system that cannot sync a folder: the file's own identity still guards the marker
  }
}
