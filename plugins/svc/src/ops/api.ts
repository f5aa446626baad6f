import {resolve} from 'node:path'

import {type BackupOptions, backupDataDir, checkBackupOptions, type FlushSource} from './backup.js'
import {requireDataDir} from './data-dir.js'
import type {ExportToDirectoryResult} from './export-dir.js'
import type {BackupManifest} from './manifest.js'
import {quietSource} from './offline.js'
import type {RestoreOptions, RestoreResult} from './restore.js'
import {callServer, liveServer} from './server-link.js'
import type {ExportSnapshotOptions, ImportResult} from './snapshot.js'

export type {BackupManifest} from './manifest.js'
export type {RestoreOptions, RestoreResult} from './restore.js'
export type {ImportResult} from './snapshot.js'
export type {ExportToDirectoryResult} from './export-dir.js'

// Each operation imports what only it needs (the engine, restore, snapshots) when it runs: the
// CLI starts a process per command, and loading the whole engine up front cost half a second
// of an incremental backup that takes one.

/** Writes every document of a branch as a file under a directory (see ops/export-dir.ts). */
export async function exportToDirectory(options: {branch?: string; dataDir: string; output: string}): Promise<ExportToDirectoryResult> {
  const {exportToDirectory: exportDir} = await import('./export-dir.js')
  return exportDir(options)
}

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
  const {openEngine} = await import('../engine/index.js')
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
export async function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  const {restoreBackup: restore} = await import('./restore.js')
  return restore(options)
}

/** A Git bundle of chosen branches (all when `refs` is empty); writes `<output>.manifest.json`. */
export function exportSnapshot(options: ExportSnapshotOptions & {dataDir: string}): Promise<BackupManifest> {
  const output = resolve(options.output)
  return onDataDir(options.dataDir, {body: {output, refs: options.refs ?? []}, path: '/api/v1/export'}, async (source) => {
    const {exportSnapshotFrom} = await import('./snapshot.js')
    return exportSnapshotFrom(source, {...options, output})
  })
}

/**
 * Adds the branches of a snapshot: verified first (checksum, `git bundle verify`), then new
 * branches are created and existing ones moved forward, and the full-text index catches up.
 * On a running server only new branches can be imported.
 */
export async function importSnapshot(options: {dataDir: string; input: string; onProgress?: (t: string) => void; verify?: boolean}): Promise<ImportResult> {
  const link = liveServer(options.dataDir)
  if (link) return callServer<ImportResult>(link, '/api/v1/import', {input: resolve(options.input), verify: options.verify === true})
  requireDataDir(options.dataDir)
  const {importSnapshotOffline} = await import('./snapshot.js')
  return importSnapshotOffline(options)
}
