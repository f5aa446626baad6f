import {resolve} from 'node:path'

import type {Engine} from '../engine/types.js'
import {EngineError} from '../engine/errors.js'
import type {Json} from '../engine/types.js'
import type {ExtraOperations, Params} from './dispatch.js'

const text = (p: Params, name: string, optional = false): string | undefined => {
  const v = p[name]
  if ((v === undefined || v === null) && optional) return undefined
  if (typeof v !== 'string' || v === '') throw new EngineError('invalid_argument', `"${name}" must be a non-empty string`)
  return v
}

/**
 * The embedded protocol's operations beyond the engine API: SQL through the query layer (one
 * session per child, so BEGIN and COMMIT span requests) and the spec's five operations through
 * ops/, on the engine this process holds. Loaded lazily so a child that only reads and writes
 * documents never loads the SQL parser.
 */
export function extraOperations(engine: Engine, version: string): ExtraOperations {
  let sql: Promise<{run(query: string, params: unknown[], branch?: string): Promise<unknown>}> | undefined
  const sqlLayer = () =>
    (sql ??= import('../query/index.js').then(({createQueryEngine}) => {
      const q = createQueryEngine(engine, {version})
      const session = q.session({user: 'embed'})
      return {
        async run(query: string, params: unknown[], branch?: string) {
          if (branch !== undefined) session.settings.set('search_path', branch === 'main' ? 'public' : `"${branch.replaceAll('"', '""')}"`)
          const outcome = await q.execute(query, params, session)
          if (outcome.error) throw outcome.error
          // The last statement's answer, as a driver would return it.
          const last = outcome.results.at(-1)
          return {columns: (last?.columns ?? []).map((c) => c.name), command: last?.tag ?? '', notices: outcome.notices, rows: last?.rows ?? []}
        },
      }
    }))
  return {
    async create_backup(p) {
      const {backupDataDir} = await import('../ops/backup.js')
      const format = text(p, 'format', true)
      if (format !== undefined && format !== 'tar.gz' && format !== 'bundle') throw new EngineError('invalid_argument', '"format" must be tar.gz or bundle')
      return backupDataDir(engine, {baseCommit: text(p, 'base_commit', true), format, output: resolve(text(p, 'output')!)})
    },
    async export_snapshot(p) {
      const {exportSnapshotFrom} = await import('../ops/snapshot.js')
      const refs = p.refs
      if (refs !== undefined && (!Array.isArray(refs) || refs.some((r) => typeof r !== 'string'))) throw new EngineError('invalid_argument', '"refs" must be an array of branch names')
      return exportSnapshotFrom(engine, {output: resolve(text(p, 'output')!), refs: refs as string[] | undefined})
    },
    async export_to_directory(p) {
      await engine.flush()
      const {exportToDirectory} = await import('../ops/export-dir.js')
      const r = await exportToDirectory({branch: text(p, 'branch', true), dataDir: engine.dataDir, output: text(p, 'output')!})
      // This process holds the directory and has flushed: the export is complete, whatever the lock says.
      const {warning: _warning, ...rest} = r as typeof r & {warning?: string}
      return rest
    },
    async import_snapshot(p) {
      const {importSnapshotLive} = await import('../ops/snapshot.js')
      return importSnapshotLive(engine, {input: resolve(text(p, 'input')!), verify: p.verify !== false})
    },
    async query(p) {
      const params = p.params ?? []
      if (!Array.isArray(params)) throw new EngineError('invalid_argument', '"params" must be an array')
      return (await sqlLayer()).run(text(p, 'sql')!, params as Json[], text(p, 'branch', true))
    },
    async restore_backup(p) {
      // Restoring replaces the database: it goes into another directory, never the one this process serves.
      const target = resolve(text(p, 'data_dir')!)
      if (target === resolve(engine.dataDir)) throw new EngineError('invalid_argument', 'a backup cannot be restored over the data directory this process has open: restore into another directory, then open that one')
      const {restoreBackup} = await import('../ops/restore.js')
      const format = text(p, 'format', true)
      if (format !== undefined && format !== 'tar.gz' && format !== 'bundle') throw new EngineError('invalid_argument', '"format" must be tar.gz or bundle')
      return restoreBackup({dataDir: target, force: p.force === true, format, input: resolve(text(p, 'input')!)})
    },
  }
}
