import {closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync} from 'node:fs'
import {open, rename, rm} from 'node:fs/promises'

export interface AtomicWriteOptions {
  /** Flush the file to disk before it replaces the old one (default true). */
  fsync?: boolean
  /** Mode of the new file (default 0o666 less the umask); 0o600 for secrets. */
  mode?: number
}

let serial = 0
// A temporary name per process and write, so two writers never share one.
const temporary = (file: string): string => `${file}.${process.pid}.${++serial}.tmp`

/**
 * Replaces `file` with `data` so a reader sees the old or the new content, never part of it,
 * and a crash leaves no half-written file: a temporary file beside it, fsync, rename. The one
 * implementation of this for gw and svc.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const tmp = temporary(file)
  try {
    const handle = await open(tmp, 'w', options.mode)
    try {
      await handle.writeFile(data)
      if (options.mode !== undefined) await handle.chmod(options.mode)
      if (options.fsync !== false) await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(tmp, file)
  } catch (error) {
    await rm(tmp, {force: true})
    throw error
  }
}

/** `writeFileAtomic` for code that cannot wait (index definitions saved inside a write). */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const tmp = temporary(file)
  try {
    const fd = openSync(tmp, 'w', options.mode)
    try {
      const bytes = typeof data === 'string' ? Buffer.from(data) : data
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at)
      if (options.fsync !== false) fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, file)
  } catch (error) {
    rmSync(tmp, {force: true})
    throw error
  }
}
