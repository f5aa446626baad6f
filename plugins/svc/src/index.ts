/**
 * The Node.js API of the svc plugin: open a data directory and use the engine directly.
 *
 *   import {openEngine} from '@toolkit/plugin-svc'
 *   const db = await openEngine('./data')
 *   await db.put({id: 'users:1', name: 'Ada'})
 *   await db.close()
 */
export * from './engine/index.js'
export {
  type BackupManifest,
  createBackup,
  exportSnapshot,
  exportToDirectory,
  type ExportToDirectoryResult,
  importSnapshot,
  type ImportResult,
  restoreBackup,
  type RestoreOptions,
  type RestoreResult,
} from './ops/api.js'
export type {BackupOptions} from './ops/backup.js'
export type {ExportSnapshotOptions} from './ops/snapshot.js'
