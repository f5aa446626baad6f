import {createHash} from 'node:crypto'
import {createReadStream, existsSync, readFileSync, renameSync, statSync, writeFileSync} from 'node:fs'

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
    createReadStream(file)
      .on('data', (d) => h.update(d))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')))
  })
}

/** Writes `<file>.manifest.json` atomically. */
export function writeManifest(m: BackupManifest): void {
  const out = manifestPath(m.path)
  writeFileSync(`${out}.tmp`, `${JSON.stringify(m, null, 2)}\n`)
  renameSync(`${out}.tmp`, out)
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
  const m = readManifest(file)
  if (!m) return undefined
  const size = statSync(file).size
  const sum = size === m.size ? await sha256File(file) : ''
  if (size !== m.size || sum !== m.checksum) {
    throw new EngineError('invalid_argument', `${file} does not match its manifest (${size === m.size ? 'SHA-256 differs' : `size ${size}, manifest says ${m.size}`}): the copy is damaged; use another copy of the backup`)
  }
  return m
}
