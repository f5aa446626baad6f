import {createHash} from 'node:crypto'
import {createReadStream, existsSync, readFileSync, statSync} from 'node:fs'

import {writeFileAtomicSync} from '@toolkit/kit'

import {EngineError} from '../engine/errors.js'

/** What every backup, snapshot, restore and import reports, and what is written beside each file. */
export interface BackupManifest {
  /** For an incremental bundle: the commit it was made after (it needs that commit to apply). */
  base_commit: null | string
  /** SHA-256 (hex) of the backup file. */
  checksum: string
  created_at: string
  /** Documents on the default branch (main) at the backed-up point. */
  documents: number
  format: BackupFormat
  /** `backup` or `snapshot` (a bundle of chosen refs). */
  kind: 'backup' | 'snapshot'
  /** The file the manifest describes. */
  path: string
  /** Branch refs in the file, with the commit each points at. */
  refs: Array<{commit: string; name: string}>
  size: number
  type: 'full' | 'incremental'
}

export type BackupFormat = 'bundle' | 'tar.gz'

export function manifestPath(file: string): string {
  return `${file}.manifest.json`
}

export function sha256File(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256')
    // 1 MiB reads: a fraction of the round trips through the thread pool of the 64 KiB default.
    createReadStream(file, {highWaterMark: 1 << 20})
      .on('data', (d) => h.update(d))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')))
  })
}

/** Writes `<file>.manifest.json` atomically. */
export function writeManifest(m: BackupManifest): void {
  const out = manifestPath(m.path)
  writeFileAtomicSync(out, `${JSON.stringify(m, null, 2)}\n`)
}

/** The manifest written beside `file`, when there is one. */
export function readManifest(file: string): BackupManifest | undefined {
  const p = manifestPath(file)
  if (!existsSync(p)) return undefined
  try {
    return JSON.parse(readFileSync(p, 'utf8')) as BackupManifest
  } catch (error) {
    throw new EngineError('invalid_argument', `${p} is not a readable manifest: ${(error as Error).message}`)
  }
}

/** Refuses a file whose SHA-256 differs from its manifest's (a damaged or truncated copy). */
export async function checkAgainstManifest(file: string): Promise<BackupManifest | undefined> {
  const check = startManifestCheck(file)
  await check.verified
  return check.manifest
}

/**
 * The manifest of `file` at once (a size that differs fails here), and its SHA-256 computed in
 * the background: a restore unpacks meanwhile into a scratch directory and awaits `verified`
 * before anything takes the target's name, so the hash costs no time of its own.
 */
export function startManifestCheck(file: string): {checksum: Promise<string>; manifest: BackupManifest | undefined; verified: Promise<void>} {
  const m = readManifest(file)
  const size = statSync(file).size
  const damaged = (why: string): EngineError => new EngineError('invalid_argument', `${file} does not match its manifest (${why}): the copy is damaged; use another copy of the backup`)
  if (m && size !== m.size) throw damaged(`size ${size}, manifest says ${m.size}`)
  const checksum = sha256File(file)
  const verified = checksum.then((sum) => {
    if (m && sum !== m.checksum) throw damaged('SHA-256 differs')
  })
  // Awaited by the caller on every path that keeps a result; never an unhandled rejection.
  verified.catch(() => {})
  return {checksum, manifest: m, verified}
}
