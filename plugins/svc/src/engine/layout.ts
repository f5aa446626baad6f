import {join, resolve} from 'node:path'

/**
 * The one place that names what lives in an svc data directory. The engine, diagnose, dump and
 * the operations (backup, restore, compact, ...) all find their files through it.
 *
 * ```
 * <data-dir>/
 *   repo/              bare Git repository: every document version, one commit per write
 *   wal/               write-ahead log segments (000000000001.log, ...): acknowledged writes not yet in Git
 *   index/<branch>/    full-text index files (rebuilt from repo/ when missing or corrupt), and
 *                      fts.clean after a clean close (fts/clean-close.ts)
 *   indexes.json       secondary index definitions (per branch; the indexes are rebuilt at open)
 *   svc.lock           instance lock: {host, pid, started} of the server holding the directory
 *   fast-import.pid    pid of the running git fast-import, for the next start after a crash
 *   server.json        while a server listens (mode 0600): pid, REST address, ops token (ops/server-link.ts)
 *   schedules.json, schedule-state.json   backup schedules and what the server last ran (ops/schedules.ts)
 *   replication-state.json   last push to each remote / last fetch of a follower (ops/sync-state.ts)
 *   document-count.json   main's document count at a commit, for backup manifests (ops/doc-count.ts)
 *   .ops/              temporary files of backups and uploads (ops/stage.ts)
 * ```
 */
export interface DataDirLayout {
  /** Secondary index definitions. */
  indexDefinitions: string
  /** Full-text index directory (the configured one when set). */
  index: string
  /** Instance lock file. */
  instanceLock: string
  /** Bare Git repository. */
  repo: string
  /** The data directory itself, absolute. */
  root: string
  /** Write-ahead log directory. */
  wal: string
  /** Pid file of the running git fast-import. */
  writerPid: string
}

export const LAYOUT_NAMES = {
  index: 'index',
  opsTemp: '.ops',
  /** Main's document count as of a commit, kept by ops/doc-count.ts for backup manifests. */
  documentCount: 'document-count.json',
  scheduleState: 'schedule-state.json',
  schedules: 'schedules.json',
  serverLink: 'server.json',
  indexDefinitions: 'indexes.json',
  instanceLock: 'svc.lock',
  replicationState: 'replication-state.json',
  repo: 'repo',
  wal: 'wal',
  writerPid: 'fast-import.pid',
} as const

export function dataDirLayout(dataDir: string, options: {indexDir?: string} = {}): DataDirLayout {
  const root = resolve(dataDir)
  return {
    index: options.indexDir === undefined ? join(root, LAYOUT_NAMES.index) : resolve(options.indexDir),
    indexDefinitions: join(root, LAYOUT_NAMES.indexDefinitions),
    instanceLock: join(root, LAYOUT_NAMES.instanceLock),
    repo: join(root, LAYOUT_NAMES.repo),
    root,
    wal: join(root, LAYOUT_NAMES.wal),
    writerPid: join(root, LAYOUT_NAMES.writerPid),
  }
}
