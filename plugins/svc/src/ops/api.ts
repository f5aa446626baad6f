import {resolve} from 'node:path'

import {openEngine} from '../engine/index.js'
import {type BackupOptions, backupDataDir, checkBackupOptions, type FlushSource} from './backup.js'
import {requireDataDir} from './data-dir.js'
import type {BackupManifest} from './manifest.js'
import {quietSource} from './offline.js'
import {restoreBackup as restoreOffline, type RestoreOptions, type RestoreResult} from './restore.js'
import {callServer, liveServer} from './server-link.js'
import {type ExportSnapshotOptions, exportSnapshotFrom, type ImportResult, importSnapshotOffline} from './snapshot.js'

export type {BackupManifest} from './manifest.js'
export type {RestoreOptions, RestoreResult} from './restore.js'
export type {ImportResult} from './snapshot.js'
export {exportToDirectory, type ExportToDirectoryResult} from './export-dir.js'

/**
 * Runs `local` on an engine this process opens, or, when a server holds the data directory,
 * asks that server to do it (`remote`): a consistent backup of a live database needs its
 * write-ahead log flushed, which only the owning process can do.
 */
async function onDataDir<T>(dataDir: string, remote: {body: unknown; path: string}, local: (source: FlushSource) => Promise<T>): Promise<T> {
  const link = liveServer(dataDir)
  if (link) return callServer<T>(link, remote.path, remote.body)
  requireDataDir(dataDir)
  const quiet = await quietSource(resolve(dataDir))
  if (quiet) {
    try {
      return await local(quiet)
    } finally {
      quiet.release()
    }
  }
  const engine = await openEngine(dataDir, {fullText: false})
  try {
    return await local(engine)
  } finally {
    await engine.close()
  }
}

/** A full (tar.gz or bundle) or incremental (bundle after `baseCommit`) backup; writes `<output>.manifest.json`. */
export function createBackup(options: BackupOptions & {dataDir: string}): Promise<BackupManifest> {
  const {format, output} = checkBackupOptions(options)
  return onDataDir(options.dataDir, {body: {base_commit: options.baseCommit, format, output}, path: '/api/v1/backup'}, (source) => backupDataDir(source, {...options, output}))
}

/** Restores a backup into a data directory no server holds (see ops/restore.ts). */
export function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  return restoreOffline(options)
}

/** A Git bundle of chosen branches (all when `refs` is empty); writes `<output>.manifest.json`. */
export function exportSnapshot(options: ExportSnapshotOptions & {dataDir: string}): Promise<BackupManifest> {
  const output = resolve(options.output)
  return onDataDir(options.dataDir, {body: {output, refs: options.refs ?? []}, path: '/api/v1/export'}, (source) => exportSnapshotFrom(source, {...options, output}))
}

/**
 * Adds the branches of a snapshot: verified first (checksum, `git bundle verify`), then new
 * branches are created and existing ones moved forward, and the full-text index catches up.
 * On a running server only new branches can be imported.
 */
export function importSnapshot(options: {dataDir: string; input: string; onProgress?: (t: string) => void; verify?: boolean}): Promise<ImportResult> {
  const link = liveServer(options.dataDir)
  if (link) return callServer<ImportResult>(link, '/api/v1/import', {input: resolve(options.input), verify: options.verify === true})
  requireDataDir(options.dataDir)
  return importSnapshotOffline(options)
}
