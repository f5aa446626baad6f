/**
 * One branch's history index in one SQLite file: every commit of the branch in order (oldest at
 * position 1) and, for each document path, the positions of the commits that changed it. A
 * document's history is then an index range scan instead of `git log -- <path>` over every commit.
 *
 * The two lookups keyed at random (commit id -> position, path -> positions) are kept in two
 * levels: appends go to small `recent_*` tables, which move into the large sealed ones in one
 * sorted pass (mergeRecent) once they hold `MERGE_AT` commits (mergeDue). Appended straight into
 * a B-tree of a million random keys, a batch of commits dirtied a page of each tree per commit or
 * so (40-56 us a commit at 1M against 13 at 100k); the recent trees stay small whatever the
 * branch's length, and the sorted pass writes each sealed page about once per merge. (Merging at
 * an eighth of the sealed size instead, which writes each sealed page a fixed number of times per
 * commit, made the appends into the larger recent trees dearer by about what the merges saved:
 * docs/benchmarks.md, "hist-start".) Every commit up to the `sealed` position of `meta` is in the
 * sealed tables, every later one in the recent tables, so how many are recent is known without
 * counting them (a `count(*)` of up to 262,144 rows per catch-up before). Reads look in both.
 * The commit-id lookup is keyed by the id's first 8 bytes as an integer (half the key of the
 * whole id), checked against the full id in `commits`.
 *
 * Derived data like the full-text index (docs/svc.md, "History index"): WAL journal with
 * synchronous=NORMAL, a crash loses at most the last transactions, and the catch-up against the
 * branch's ref redoes them (history-index.ts).
 */
import {mkdirSync, rmSync} from 'node:fs'
import {dirname} from 'node:path'

import Database from 'better-sqlite3'

import {openDerivedSqlite} from './derived-sqlite.js'

/** Bumped when the schema changes: a file of another format is rebuilt. */
export const HISTORY_FORMAT = '2'

/** How many commits the recent tables hold before they move into the sealed ones (mergeDue). */
export const MERGE_AT = 65_536

/** One commit as the index keeps it. */
export interface IndexedCommit {
  /** The commit's date in seconds (what `git log --until` compares). */
  ct: number
  /** Whether the commit carries a Svc-Time trailer (svc's own commits do). */
  hasTime: boolean
  /** Svc-Origin / Svc-User / Svc-Request-Id trailers, as JSON, or null when there are none. */
  meta: null | string
  /** The Svc-Time trailer in epoch ms when it reads back as the same ISO string, else null. */
  ms: null | number
  sha: string
  /** Paths the commit changed (documents only, expiry markers left out). */
  paths: string[]
  /** The Svc-Time trailer as written, when `ms` cannot reproduce it (absent: null with ms null). */
  timeText: null | string
}

export interface StoredCommit {
  ct: number
  meta: null | string
  ms: null | number
  pos: number
  sha: string
  timeText: null | string
}

interface CommitRow {
  ct: number
  meta: null | string
  ms: null | number
  pos: number
  sha: Buffer
  ttext: null | string
}

const toStored = (r: CommitRow): StoredCommit => ({ct: r.ct, meta: r.meta, ms: r.ms, pos: r.pos, sha: r.sha.toString('hex'), timeText: r.ttext})

/**
 * The key an as-of read by time compares: a commit is "at or before t" when its Svc-Time is at or
 * before t and its commit date (seconds) at most floor(t/1000)+1, which is what the `git log
 * --until` walk it replaces asks. Both conditions fold into one number: key <= t.
 */
export function asOfKey(ct: number, ms: null | number, hasTrailer: boolean): null | number {
  const dateKey = (ct - 1) * 1000
  if (!hasTrailer) return dateKey
  return ms === null ? null : Math.max(ms, dateKey)
}

/** The last commit indexed and its as-of key; `monotonic` false once a key went backwards. */
export interface HistoryState {
  lastKey: null | number
  monotonic: boolean
  pos: number
  /** The last position in the sealed tables: the recent ones hold positions sealed+1..pos. */
  sealed: number
  tip: string
}

/**
 * The state of a history file as its rows say. Self-contained, as appendCommits, for the worker.
 */
export function readHistoryState(db: Database.Database): HistoryState {
  const last = db.prepare('SELECT pos, sha, k FROM commits ORDER BY pos DESC LIMIT 1').get() as {k: null | number; pos: number; sha: Buffer} | undefined
  const meta = new Map((db.prepare(`SELECT key, value FROM meta WHERE key IN ('monotonic', 'sealed')`).all() as Array<{key: string; value: string}>).map((r) => [r.key, r.value]))
  const pos = last?.pos ?? 0
  const sealedRow = meta.get('sealed')
  // A file written before the row was kept: the first recent position tells, once (the next append writes the row).
  const sealed = sealedRow === undefined ? ((db.prepare('SELECT min(pos) FROM recent_commit_ids').pluck().get() as null | number) ?? pos + 1) - 1 : Number(sealedRow)
  return {lastKey: last?.k ?? null, monotonic: (meta.get('monotonic') ?? '1') === '1', pos, sealed, tip: last ? last.sha.toString('hex') : ''}
}

/**
 * Appends commits in branch order (oldest first) in one transaction and moves `state` on once it
 * committed. Self-contained (no imports, no module constants; `key` is asOfKey): the history
 * worker (history-worker.ts) runs its source text on its own connection, so one place writes rows.
 */
export function appendCommits(db: Database.Database, state: HistoryState, commits: IndexedCommit[], key: typeof asOfKey): void {
  if (commits.length === 0) return
  const insCommit = db.prepare('INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?)')
  const insId = db.prepare('INSERT OR IGNORE INTO recent_commit_ids VALUES (?, ?)')
  const insChange = db.prepare('INSERT OR IGNORE INTO recent_changes VALUES (?, ?)')
  const next = {...state}
  db.transaction(() => {
    for (const c of commits) {
      const pos = ++next.pos
      const k = key(c.ct, c.ms, c.hasTime)
      if (k === null || (next.pos > 1 && (next.lastKey === null || k < next.lastKey))) next.monotonic = false
      next.lastKey = k
      const sha = Buffer.from(c.sha, 'hex')
      insCommit.run(pos, sha, c.ct, c.ms, c.timeText, c.meta, k)
      insId.run(sha.readBigInt64BE(0), pos)
      for (const p of c.paths) insChange.run(p, pos)
      next.tip = c.sha
    }
    const setMeta = db.prepare('INSERT OR REPLACE INTO meta VALUES (?, ?)')
    setMeta.run('monotonic', next.monotonic ? '1' : '0')
    setMeta.run('sealed', String(next.sealed))
  })()
  Object.assign(state, next)
}

/**
 * Whether the recent tables hold `factor` times `mark` commits or more (past 4x the mark a walk
 * merges mid-way: history-worker.ts). Self-contained, for the worker.
 */
export function mergeDue(state: HistoryState, mark: number, factor = 1): boolean {
  return state.pos - state.sealed >= factor * mark
}

/**
 * Moves the recent tables' rows into the sealed ones in one transaction: read in key order, they
 * go into each sealed B-tree in one sorted pass. Readers on other connections see the rows in one
 * level or the other, never neither. Self-contained, for the worker.
 */
export function mergeRecent(db: Database.Database, state: HistoryState): void {
  db.transaction(() => {
    db.exec(`
      INSERT OR IGNORE INTO commit_ids SELECT id, pos FROM recent_commit_ids ORDER BY id, pos;
      DELETE FROM recent_commit_ids;
      INSERT OR IGNORE INTO changes SELECT path, pos FROM recent_changes ORDER BY path, pos;
      DELETE FROM recent_changes;
    `)
    db.prepare('INSERT OR REPLACE INTO meta VALUES (?, ?)').run('sealed', String(state.pos))
  })()
  state.sealed = state.pos
}

export class HistoryStore {
  private readonly db: Database.Database
  private readonly st: {
    byPos: Database.Statement<[number], CommitRow>
    bySha: Database.Statement<[{id: bigint; sha: Buffer}], {pos: number}>
    delete: Database.Statement<[number]>[]
    keyAt: Database.Statement<[number], {k: null | number}>
    setMeta: Database.Statement<[string, string]>
    versions: Database.Statement<[{before: number; limit: number; p0: string; p1: string}], CommitRow>
  }

  private state: HistoryState

  constructor(readonly file: string) {
    const schema = `
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS commits (pos INTEGER PRIMARY KEY, sha BLOB NOT NULL, ct INTEGER NOT NULL, ms INTEGER, ttext TEXT, meta TEXT, k INTEGER);
      CREATE TABLE IF NOT EXISTS commit_ids (id INTEGER NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY (id, pos)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS recent_commit_ids (id INTEGER NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY (id, pos)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS changes (path TEXT NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY (path, pos)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS recent_changes (path TEXT NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY (path, pos)) WITHOUT ROWID;
    `
    const isNew = (db: Database.Database) => db.prepare('SELECT count(*) FROM commits').pluck().get() === 0
    const opened = openDerivedSqlite(file, {formatCode: 'SVC_HISTORY_FORMAT', formatVersion: HISTORY_FORMAT, isNew, schema, what: 'history index'}, (db) => {
      const st: HistoryStore['st'] = {
        byPos: db.prepare('SELECT pos, sha, ct, ms, ttext, meta FROM commits WHERE pos = ?'),
        bySha: db.prepare(
          'SELECT c.pos AS pos FROM (SELECT pos FROM recent_commit_ids WHERE id = @id UNION ALL SELECT pos FROM commit_ids WHERE id = @id) i JOIN commits c ON c.pos = i.pos WHERE c.sha = @sha',
        ),
        delete: ['recent_changes', 'changes', 'recent_commit_ids', 'commit_ids', 'commits'].map((t) => db.prepare(`DELETE FROM ${t} WHERE pos > ?`)),
        keyAt: db.prepare('SELECT k FROM commits WHERE pos = ?'),
        setMeta: db.prepare('INSERT OR REPLACE INTO meta VALUES (?, ?)'),
        versions: db.prepare(
          `SELECT DISTINCT c.pos AS pos, c.sha AS sha, c.ct AS ct, c.ms AS ms, c.ttext AS ttext, c.meta AS meta FROM (
             SELECT pos FROM recent_changes WHERE path IN (@p0, @p1) AND pos < @before
             UNION ALL SELECT pos FROM changes WHERE path IN (@p0, @p1) AND pos < @before
           ) ch JOIN commits c ON c.pos = ch.pos ORDER BY ch.pos DESC LIMIT @limit`,
        ),
      }
      return st
    })
    this.db = opened.db
    this.st = opened.prepared
    this.state = readHistoryState(this.db)
  }

  /** Another connection (the history worker) appended: the last commit is read again from the file. */
  reload(): void {
    this.state = readHistoryState(this.db)
  }

  /** The last commit indexed ('' when none). */
  get tip(): string {
    return this.state.tip
  }

  get commits(): number {
    return this.state.pos
  }

  /** Where a commit sits in the branch, or undefined when the index does not hold it. */
  position(sha: string): number | undefined {
    if (!/^[0-9a-f]{40}$/.test(sha)) return undefined
    const bytes = Buffer.from(sha, 'hex')
    return this.st.bySha.get({id: bytes.readBigInt64BE(0), sha: bytes})?.pos
  }

  /** Forgets every commit after `pos` (the branch was moved back or elsewhere). */
  truncate(pos: number): void {
    const sealed = Math.min(this.state.sealed, pos)
    this.db.transaction(() => {
      for (const d of this.st.delete) d.run(pos)
      // The flag is recomputed cheaply only when cleared entirely; otherwise it stays as it was (a false "not monotonic" only costs the git fallback).
      if (pos === 0) this.st.setMeta.run('monotonic', '1')
      this.st.setMeta.run('sealed', String(sealed))
    })()
    const last = pos === 0 ? undefined : this.st.byPos.get(pos)
    this.state = {lastKey: pos === 0 ? null : (this.st.keyAt.get(pos)?.k ?? null), monotonic: pos === 0 ? true : this.state.monotonic, pos, sealed, tip: last ? last.sha.toString('hex') : ''}
  }

  /** Commits before position `before` that changed one of the paths, newest first. */
  versions(paths: [string, string], before: number, limit: number): StoredCommit[] {
    return this.st.versions.all({before, limit, p0: paths[0], p1: paths[1]}).map(toStored)
  }

  /**
   * The last commit whose as-of key is at most `t`, by binary search over positions; undefined
   * when the keys are not in order (a clock that went back, a commit without a readable time)
   * and the caller must walk instead, or null when no commit is that old.
   */
  commitAt(t: number): null | string | undefined {
    if (!this.state.monotonic) return undefined
    let lo = 1
    let hi = this.state.pos
    let found = 0
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const k = this.st.keyAt.get(mid)?.k
      if (k === undefined || k === null) return undefined
      if (k <= t) {
        found = mid
        lo = mid + 1
      } else hi = mid - 1
    }
    return found === 0 ? null : this.st.byPos.get(found)!.sha.toString('hex')
  }

  /** A copy of this file for a branch created from this one (`VACUUM INTO` writes a consistent snapshot). */
  copyTo(file: string): void {
    mkdirSync(dirname(file), {recursive: true})
    rmSync(file, {force: true})
    this.db.prepare('VACUUM INTO ?').run(file)
  }

  close(): void {
    if (this.db.open) this.db.close()
  }
}
