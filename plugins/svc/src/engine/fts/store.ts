/**
 * One branch's full-text index in one SQLite file, searched through FTS5 without loading it.
 *
 * Why SQLite FTS5 and not segments of our own: see docs/svc.md ("The full-text index"). In short,
 * it gives an on-disk inverted index with in-place updates, BM25, prefix queries, background
 * segment merging and crash safety in one well-kept library, and bench/svc-fts.mjs measured it
 * against the in-memory index it replaces.
 *
 * The index is derived data (Git holds the documents), so the journal is WAL with
 * synchronous=NORMAL: a crash may lose the last transactions, never the file's consistency, and
 * the catch-up at the next start reindexes whatever is behind. A build from nothing runs without
 * a journal (see beginBulk): a crash then leaves a file marked unfinished, which is rebuilt.
 */
import Database from 'better-sqlite3'
import {randomUUID} from 'node:crypto'

import {openDerivedSqlite} from '../derived-sqlite.js'

import {RowLengths} from './lengths.js'
import {RowLog} from './row-log.js'
import {groupsExpression, type MatchQuery, parseMatch, tableToken} from './match.js'
import {Bm25Scorer, parseTotals, type RowCounts, TABLE_TOKENISH} from './score.js'
import {FTS_TOKENIZE} from './tokens.js'

/** Bumped when the schema or the text extraction changes: an index of another format is rebuilt. */
export const FTS_FORMAT = '4'
export const FTS_FILE = 'fts.sqlite'

export interface StoreHit {
  id: string
  score: number
}

/**
 * The statements that put one document, shared with the large-document worker
 * (large-writer.ts), which runs them on its own connection: one place knows the schema.
 */
export const PUT_SQL = {
  delText: 'DELETE FROM text WHERE rowid = ?',
  insDoc: 'INSERT INTO docs(id, sha) VALUES (?, ?)',
  insText: 'INSERT INTO text(rowid, tbl, body) VALUES (?, ?, ?)',
  row: 'SELECT rowid, sha FROM docs WHERE id = ?',
  updDoc: 'UPDATE docs SET sha = ? WHERE rowid = ?',
} as const

/**
 * Matches scored at most by one search, unless a page needs more: a word in most documents
 * would otherwise cost a BM25 score per matching row (700k rows at 1M documents). Beyond it the
 * first matches in index order are ranked (see search) and the total is estimated.
 */
export const SEARCH_WINDOW = 10_000

/**
 * Per-row counts are asked for a phrase in more documents than this many search windows
 * (wantCounts): below it bm25's own count is a few milliseconds, and building the counts (35-170
 * ms of the count worker at 1M documents) repaid itself only after many searches of the same
 * phrase, while competing with the searches for the cores (docs/benchmarks.md, integration of
 * the eleventh session: 3-5 ms of worker CPU per search of the bench, p95 worse).
 */
const ASK_COUNTS_WINDOWS = 5

/**
 * A query matching more than the window ranks only the first fifth of it (the window still
 * counts and places the estimate). Scoring costs about 1 us a row, and the rows of those first
 * matches are as arbitrary a choice as the window's (the earliest indexed): ranking 10,000 of
 * them was 8-10 ms of a 10-17 ms search at 100k documents, quiet machine.
 */
const RANKED_DIVISOR = 5

/** Phrase document counts kept (see documentsWith and common); past it the cache starts again. */
const COUNTED_PHRASES = 4096

/**
 * An estimated search is scored here (fts/score.ts) rather than by FTS5's bm25 when its ranked
 * rows end within this share of the index: reading each phrase's list up to there costs less
 * than bm25's count of the whole list (per entry, the instance walk costs a few times FTS5's
 * count; its document counts are then counted once per state of the index).
 */
const OWN_SCORING_SHARE = 8

/**
 * A search of one word under the window matching at least this many rows is ranked by
 * fts/score.ts from the word's whole lists rather than by bm25 (docs/svc.md, "Searches of one
 * word scored from its lists"): bm25 costs about 0.5 us a row there (a seek for the row's length
 * among them), the walk of the lists less than half of that. Below it either is a fraction of a
 * millisecond.
 */
const OWN_SCORING_MIN = 500

/**
 * The documents (as last counted) the scoring phrases of a search with words that score nothing
 * may hold in all for it to be scored from their whole lists: a walk costs about 0.2 us an
 * instance, the bm25 it replaces about 0.5 us a matched row plus its count of the lists.
 */
const OWN_SCORING_LISTS = 3 * SEARCH_WINDOW

/** Answers kept per store until its next write (see search). */
const CACHED_ANSWERS = 128
/** Answers with more hits than this are not kept (their memory, and they are rare). */
const CACHED_HITS_MAX = 100

export interface StoreSearch {
  hits: StoreHit[]
  total: number
  /** Set when `total` is extrapolated from the first matches (the query matches more than the window). */
  estimated?: true
}

/** The SQLite error codes that mean the file itself is damaged (not a busy or full disk). */
export function isCorruption(error: unknown): boolean {
  const code = (error as {code?: unknown}).code
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')
}

function checkPages(db: Database.Database): void {
  const problems = db.pragma('quick_check', {simple: false}) as Array<{quick_check: string}>
  if (problems.length !== 1 || problems[0].quick_check !== 'ok') {
    throw Object.assign(new Error(`integrity check failed: ${problems.slice(0, 3).map((p) => p.quick_check).join('; ')}`), {code: 'SQLITE_CORRUPT'})
  }
}

/**
 * Checks a branch's index file without changing it (for `svc diagnose`): the documents it holds,
 * or an error naming what is wrong.
 */
export function inspectIndexFile(file: string): {documents: number} {
  const db = new Database(file, {fileMustExist: true, readonly: true})
  try {
    checkPages(db)
    const format = db.prepare(`SELECT value FROM meta WHERE key = 'format'`).pluck().get() as string | undefined
    if (format !== FTS_FORMAT) throw new Error(`index format ${format}, this version reads ${FTS_FORMAT}`)
    return {documents: db.prepare('SELECT count(*) FROM docs').pluck().get() as number}
  } finally {
    db.close()
  }
}

/**
 * FTS5's merge settings, kept in the file (its `text_config` table), so the large-document
 * worker's connection merges alike. Every write transaction flushes a new level-0 segment and
 * FTS5 then merges: with its defaults (`automerge` 4, `crisismerge` 16) a posting was rewritten
 * once per level of a fourfold tree, most of the commit's cost when writes arrive a few hundred
 * per transaction. Merging 8 segments at a time cost 0.59-0.64x of the defaults' CPU per write
 * at 1M documents, for searches 0.97-1.05x theirs (16 at a time: 0.46-0.67x, but searches
 * 1.06-1.11x, seeking in twice the segments; docs/benchmarks.md, "the full-text apply's cost per write").
 * `crisismerge` (the count at which a level is merged whole in one commit, a long hold of the
 * event loop) stays far above it: at 16 against an `automerge` of 16, levels of a 100k index were
 * merged whole, 0.5-0.7 s of one commit.
 */
export const FTS_MERGE = {automerge: 8, crisismerge: 64} as const

/** The meta key set while a bulk build runs without a journal: a file still holding it is rebuilt. */
const BUILDING = 'building'

export class IndexStore {
  private readonly db: Database.Database
  private docCount: number
  private bulk = false
  /**
   * Recent answers, valid while nothing wrote the index: `written` is bumped by this connection's
   * writes, SQLite's data_version by commits of others (fts/large-writer.ts). A search for a very
   * common word costs 10-20 ms at 100k documents whatever its window (FTS5's bm25 counts every
   * match of each phrase for its weight), and such words are the ones searched most often.
   */
  private readonly answers = new Map<string, StoreSearch>()
  private answersAt = ''
  private written = 0
  /** Documents holding each phrase, and `written` when counted (see documentsWith and common). */
  private readonly counted = new Map<string, {at: number; n: number}>()
  /** Documents holding each body phrase, counted since the last write (exact: see ownScored). */
  private readonly docsWith = new Map<string, number>()
  private readonly scorer: Bm25Scorer
  /**
   * Per-row counts (wantCounts) are asked for only once no other connection has written the index
   * for this long (ms): its writes drop them, so under a stream of large documents (indexed by
   * the worker's connection) building them would only burn background CPU. This connection's
   * writes are applied to them instead (rowLog).
   */
  countsQuietMs = 1000
  /** When a search or a slice first saw another connection's commit (0: not since it was opened). */
  private changedAt = 0
  /** SQLite's data_version when last synced: another connection committed when it moves. */
  private version: number | undefined
  /**
   * This connection's writes since a state of the index, so the lists and counts score.ts keeps
   * are brought up to date instead of dropped (fts/row-log.ts).
   */
  private readonly rowLog = new RowLog()
  /**
   * Written beside each write's generation in the file (meta `gen`), so the count worker, reading
   * its own snapshot, tells which of this connection's writes its counts include; another
   * process's (or another store's) writes carry another epoch.
   */
  private readonly epoch = randomUUID().slice(0, 8)
  /** Rows were written since the generation was last written to the file (see writeGen). */
  private genDirty = false
  /** Told after each committed transaction (fulltext.ts: the WAL checkpoints, fts/wal-checkpointer.ts). */
  afterCommit: (() => void) | undefined
  /** Row lengths for score.ts: a row is forgotten when written here, all when another connection commits. */
  private readonly lengths: RowLengths
  /** Per word, whether the index holds a longer term starting with it, until the next write (see asRun). */
  private readonly extended = new Map<string, boolean>()
  private readonly st: {
    count: Database.Statement<[string], number>
    averages: Database.Statement<[], Buffer | undefined>
    bounds: Database.Statement<[], {hi: number | null; lo: number | null}>
    dataVersion: Database.Statement<[], number>
    probe: Database.Statement<[string, number], {edge: number | null; n: number}>
    delDoc: Database.Statement<[number | bigint]>
    delText: Database.Statement<[number | bigint]>
    gen: Database.Statement<[string]>
    insDoc: Database.Statement<[string, string]>
    insText: Database.Statement<[number | bigint, string, string]>
    page: Database.Statement<[number | bigint, number], {id: string; rowid: number; sha: string}>
    idOf: Database.Statement<[number], string | undefined>
    row: Database.Statement<[string], {rowid: number; sha: string}>
    search: Database.Statement<[string, number, number], StoreHit>
    searchFrom: Database.Statement<[string, number, number, number], StoreHit>
    probeRows: Database.Statement<[string, number], number>
    searchWithin: Database.Statement<[string, number, string, number, number], StoreHit>
    updDoc: Database.Statement<[string, number | bigint]>
  }

  /**
   * Opens (creating when missing); throws when it is unreadable or of another format. The page
   * check (quickCheck) reads the whole file, so the engine runs it in the background instead.
   */
  constructor(readonly file: string) {
    const schema = `
      CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS docs(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sha TEXT NOT NULL);
      CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(tbl, body, content='', contentless_delete=1, prefix='3 4', tokenize='${FTS_TOKENIZE}');
    `
    // 32 MB of page cache: the hot part of the term b-tree stays in memory, the rest is read on demand.
    const opened = openDerivedSqlite<{count: number; st: IndexStore['st']}>(file, {cacheKiB: 32_000, formatCode: 'SVC_FTS_FORMAT', formatVersion: FTS_FORMAT, schema, what: 'index'}, (db) => {
      if (db.prepare(`SELECT 1 FROM meta WHERE key = '${BUILDING}'`).pluck().get() !== undefined) {
        throw Object.assign(new Error('a build without a journal was cut short (the process stopped during it)'), {code: 'SVC_FTS_UNFINISHED'})
      }
      setMergeSettings(db)
      // FTS5's term list, per connection (temp: nothing is written to the file): see asRun.
      db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.text_terms USING fts5vocab(main, 'text', 'instance')`)
      const st: IndexStore['st'] = {
        // Two subqueries: SQLite reads min() or max() alone from the b-tree's edge, but a SELECT
        // of both scanned all of docs (6-9 ms per estimated search at 100k documents).
        bounds: db.prepare('SELECT (SELECT min(rowid) FROM docs) AS lo, (SELECT max(rowid) FROM docs) AS hi'),
        count: db.prepare<[string], number>('SELECT count(*) FROM text WHERE text MATCH ?').pluck(),
        // FTS5's own totals (its "averages" record, rowid 1 of the shadow table): bm25's N.
        averages: db.prepare<[], Buffer | undefined>('SELECT block FROM text_data WHERE id = 1').pluck(),
        dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
        // FTS5 walks matches in rowid order and stops after the window: no scoring, no sort.
        // (Ascending: FTS5's descending walk measured 10-50x slower on multi-segment indexes.)
        probe: db.prepare('SELECT count(*) AS n, max(rowid) AS edge FROM (SELECT rowid FROM text WHERE text MATCH ? ORDER BY rowid LIMIT ?)'),
        delDoc: db.prepare('DELETE FROM docs WHERE rowid = ?'),
        delText: db.prepare(PUT_SQL.delText),
        gen: db.prepare(`INSERT OR REPLACE INTO meta(key, value) VALUES ('gen', ?)`),
        insDoc: db.prepare(PUT_SQL.insDoc),
        insText: db.prepare(PUT_SQL.insText),
        page: db.prepare('SELECT rowid, id, sha FROM docs WHERE rowid > ? ORDER BY rowid LIMIT ?'),
        idOf: db.prepare<[number], string | undefined>('SELECT id FROM docs WHERE rowid = ?').pluck(),
        row: db.prepare(PUT_SQL.row),
        // bm25 is lower-is-better; the weights give the table column no say in the score.
        search: db.prepare(`
          SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? ORDER BY s LIMIT ? OFFSET ?) x
          JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`),
        searchFrom: db.prepare(`
          SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? AND rowid <= ? ORDER BY s LIMIT ? OFFSET ?) x
          JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`),
        probeRows: db.prepare<[string, number], number>('SELECT rowid FROM text WHERE text MATCH ? ORDER BY rowid LIMIT ?').pluck(),
        // searchFrom scored by the phrases of the first expression, over the rows listed (JSON,
        // the whole search's matches): see scoredPhrases. The + keeps the list out of FTS5 (one
        // lookup per listed row would count the phrases again for each).
        searchWithin: db.prepare(`
          SELECT d.id AS id, -x.s AS score FROM (
            SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text
            WHERE text MATCH ? AND rowid <= ? AND +rowid IN (SELECT value FROM json_each(?))
            ORDER BY s LIMIT ? OFFSET ?) x
          JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`),
        updDoc: db.prepare(PUT_SQL.updDoc),
      }
      return {count: db.prepare('SELECT count(*) FROM docs').pluck().get() as number, st}
    })
    this.db = opened.db
    this.lengths = new RowLengths(this.db)
    this.scorer = new Bm25Scorer(this.db, 'temp.text_terms', this.lengths, this.rowLog)
    this.st = opened.prepared.st
    this.docCount = opened.prepared.count
  }

  get documents(): number {
    return this.docCount
  }

  /** Another connection (fts/large-writer.ts) put a document: `added` when it was not indexed before. */
  noteWritten(added: boolean): void {
    if (added) this.docCount++
    this.written++
  }

  close(): void {
    if (!this.db.open) return
    // Between transactions the bulk-built file is consistent: it is kept and the next start
    // catches up from it, as from any index on disk.
    if (this.bulk) {
      try {
        this.endBulk()
      } catch {
        // left marked unfinished: the next open rebuilds it
      }
    }
    this.db.close()
    this.rowLog.close()
  }

  /**
   * A build from nothing writes 100k+ documents that exist nowhere but in Git, so it runs without
   * SQLite's journal and without fsync (measured: about a third less CPU per document than WAL
   * mode, whose every commit writes the pages twice). A `building` mark is committed first and
   * cleared by endBulk: a file found with it (a crash or a failed transaction mid-build, which
   * without a journal cannot roll back) is rebuilt. Returns false when the journal could not be
   * switched off (another connection reads the file), and the build then runs in WAL mode.
   */
  beginBulk(): boolean {
    if (this.bulk) return true
    this.db.prepare(`INSERT OR REPLACE INTO meta(key, value) VALUES ('${BUILDING}', '1')`).run()
    // better-sqlite3 opens connections in SQLite's defensive mode, which refuses journal_mode=OFF;
    // it is lifted for the switch only. WAL is left through DELETE (SQLite allows no direct step).
    this.db.unsafeMode(true)
    let mode: string
    try {
      this.db.pragma('journal_mode = DELETE')
      mode = this.db.pragma('journal_mode = OFF', {simple: true}) as string
    } finally {
      this.db.unsafeMode(false)
    }
    if (mode !== 'off') {
      this.db.pragma('journal_mode = WAL')
      this.db.prepare(`DELETE FROM meta WHERE key = '${BUILDING}'`).run()
      return false
    }
    this.db.pragma('synchronous = OFF')
    this.bulk = true
    return true
  }

  /** Back to WAL with synchronous=NORMAL, the file synced, the `building` mark cleared. */
  endBulk(): void {
    if (!this.bulk) return
    this.db.pragma('synchronous = FULL')
    this.db.pragma('journal_mode = WAL')
    this.db.pragma('synchronous = NORMAL')
    this.db.prepare(`DELETE FROM meta WHERE key = '${BUILDING}'`).run()
    this.bulk = false
  }

  /** SQLite's own checkpoint of this connection: past this many pages of WAL (fts/wal-checkpointer.ts). */
  walAutocheckpoint(pages: number): void {
    this.db.pragma(`wal_autocheckpoint = ${Math.trunc(pages)}`)
  }

  /** Set while a bulk build runs (see beginBulk). */
  get bulkBuilding(): boolean {
    return this.bulk
  }

  /** SQLite's `quick_check` of every page; throws an SQLITE_CORRUPT error naming the first problems. */
  quickCheck(): void {
    checkPages(this.db)
  }

  /** Runs `fn` in one transaction: a batch of writes costs one commit, not one per document. */
  transaction(fn: () => void): void {
    try {
      this.db.transaction(() => {
        fn()
        this.writeGen()
      })()
    } catch (error) {
      // Rolled back: the log holds writes the index does not, so nothing kept can be brought up to date.
      this.genDirty = false
      this.dropKept()
      throw error
    }
    this.afterCommit?.()
    if (!this.scorer.keepsAny) return
    this.rowLog.settle()
    // The kept counts follow each transaction's rows, not all 4,096 of the log's at once: that
    // catch-up held the event loop 100-260 ms at 1M documents (48 phrases counted), inside the
    // write that filled the log (docs/benchmarks.md, fts-cpu).
    this.scorer.catchUpCounts()
  }

  /**
   * Adds a document or replaces the indexed version of it. `row`: what rowOf(id) returned just
   * before, so a batch looks each id up once (null: not indexed).
   */
  put(id: string, sha: string, text: string, row: {rowid: number} | null = this.st.row.get(id) ?? null): void {
    this.written++
    let rowid: number | bigint
    this.unlogged(() => {
      if (row) {
        this.lengths.forget(row.rowid)
        this.st.delText.run(row.rowid)
        this.st.updDoc.run(sha, row.rowid)
        rowid = row.rowid
      } else {
        rowid = this.st.insDoc.run(id, sha).lastInsertRowid
        this.docCount++
      }
      const colon = id.indexOf(':')
      this.st.insText.run(rowid, colon === -1 ? '' : tableToken(id.slice(0, colon)), text)
    })
    this.noteRow(Number(rowid!), text)
  }

  /**
   * Runs a write's statements; when one fails, what score.ts keeps is dropped: outside a
   * transaction the statements before it stay written, and the log would not know of them.
   */
  private unlogged(fn: () => void): void {
    try {
      fn()
    } catch (error) {
      this.dropKept()
      throw error
    }
  }

  remove(id: string): boolean {
    const row = this.st.row.get(id)
    if (!row) return false
    this.written++
    this.lengths.forget(row.rowid)
    this.unlogged(() => {
      this.st.delText.run(row.rowid)
      this.st.delDoc.run(row.rowid)
    })
    this.docCount--
    this.noteRow(row.rowid, null)
    return true
  }

  /**
   * Row `rowid` was written (null: removed): logged for what score.ts keeps, its generation
   * written beside it for the count worker (countsDone). A bulk build keeps nothing (its batches
   * are thousands of rows); a full log is applied to everything kept and started again.
   */
  private noteRow(rowid: number, text: null | string): void {
    this.rowLog.note(rowid, text)
    this.genDirty = true
    if (!this.db.inTransaction) this.writeGen()
    if (this.bulk) this.dropKept()
    else if (this.rowLog.full) {
      this.scorer.catchUp()
      this.rowLog.clear()
    }
  }

  /**
   * Writes the current generation into the file once per transaction, at its end: the count
   * worker only ever reads committed states, so the generation of every row but a transaction's
   * last was never seen (one meta write per row was ~1 us of each indexed write).
   */
  private writeGen(): void {
    if (!this.genDirty) return
    this.st.gen.run(`${this.epoch} ${this.rowLog.gen}`)
    this.genDirty = false
  }

  /** Drops every list and count score.ts keeps, and the log of writes they would need. */
  private dropKept(): void {
    this.scorer.forget()
    this.rowLog.clear()
  }

  /**
   * Reads the next `rows` row lengths into memory for fts/score.ts (see fts/lengths.ts); false
   * when every row has been read. The engine calls it in slices once the index is caught up, so
   * the first searches of each word do not read their rows' lengths one by one.
   */
  warmLengths(rows = 4096): boolean {
    return this.db.transaction(() => {
      // Another connection's commit since the last search: what was kept is dropped first.
      this.sync()
      return this.lengths.warm(rows)
    })()
  }

  /** The row of `id` and the blob sha of its indexed version. */
  rowOf(id: string): {rowid: number; sha: string} | undefined {
    return this.st.row.get(id)
  }

  /** The blob sha of the indexed version of `id`. */
  sha(id: string): string | undefined {
    return this.st.row.get(id)?.sha
  }

  /** Indexed documents after rowid `after`, in rowid order: walks the index in pages. */
  page(after: number, limit: number): Array<{id: string; rowid: number; sha: string}> {
    return this.st.page.all(after, limit)
  }

  /**
   * Best matches first, ranked by BM25. A query matching more rows than the window (a word in
   * a large share of the documents, whose BM25 weight is then near zero anyway) ranks only the
   * first `window` matches in index order (the earliest indexed documents) and extrapolates the
   * total from how far into the index they reach, so its cost
   * stays bounded as the index grows; of those it ranks the first fifth (RANKED_DIVISOR). Smaller queries are ranked and counted exactly. An answer is kept
   * until the index is next written, so a common word searched again costs a map lookup.
   */
  search(query: string, options: {limit: number; offset: number; table?: string}, window = SEARCH_WINDOW): StoreSearch {
    const parsed = parseMatch(query, options.table)
    if (parsed === undefined || this.docCount === 0) return {hits: [], total: 0}
    // One read transaction: every statement of the search, and the counts kept for this state of
    // the index, see the same commit even when the large-document worker commits meanwhile (the
    // scores of fts/score.ts come from several statements, bm25's from one).
    return this.db.transaction(() => this.searchAt(parsed, options, window))()
  }

  private searchAt(parsed: MatchQuery, options: {limit: number; offset: number; table?: string}, window: number): StoreSearch {
    const match = parsed.full
    this.sync()
    const key = `${options.limit} ${options.offset} ${window} ${match}`
    const kept = this.answers.get(key)
    if (kept) {
      // Most recently used last: the oldest is dropped first.
      this.answers.delete(key)
      this.answers.set(key, kept)
      return {...kept, hits: kept.hits.map((h) => ({...h}))}
    }
    const answer = this.searchIndex(parsed, options, window)
    if (answer.hits.length <= CACHED_HITS_MAX) {
      if (this.answers.size >= CACHED_ANSWERS) this.answers.delete(this.answers.keys().next().value!)
      this.answers.set(key, {...answer, hits: answer.hits.map((h) => ({...h}))})
    }
    return answer
  }

  /**
   * Drops what the index's writes since the last search made stale (within a read transaction):
   * the answers and the per-search caches after any write; after another connection's commit
   * (not in the log) also the lists and counts score.ts keeps, the phrase counts and the row
   * lengths. This connection's own writes are applied to the lists and counts when next used.
   */
  private sync(): void {
    const version = this.st.dataVersion.get()
    const at = `${this.written} ${version}`
    if (at === this.answersAt) return
    this.answers.clear()
    this.extended.clear()
    this.docsWith.clear()
    if (this.answersAt !== '' && version !== this.version) {
      this.changedAt = Date.now()
      this.dropKept()
      this.counted.clear()
      this.lengths.clear()
    }
    this.version = version
    this.answersAt = at
  }

  private searchIndex(given: MatchQuery, options: {limit: number; offset: number}, window: number): StoreSearch {
    const {find, q} = this.asRun(given)
    const match = q.full
    const page = 4 * (options.offset + options.limit)
    const span = Math.max(window, page)
    const ranked = Math.max(Math.floor(window / RANKED_DIVISOR), page)
    const scoring = this.scoredPhrases(q)
    const scored = scoring.expression
    // One pass without scoring: the number of matches up to the window, and how far into the
    // index the window reaches. Fewer than the window: that count is the exact total. A search
    // scored by fewer phrases keeps the rows themselves: they are the rows it scores (a second
    // walk of the whole search's match cost as much again, 10 ms at 1M documents for `x kaka`).
    let edge: null | number
    let n: number
    let rows: number[] | undefined
    // Several words all scoring, with short lists: the rows too, for score.ts (see wholeScored).
    let listedRows: number[] | undefined
    // One word whose lists score.ts keeps: its rows are those lists' (no walk of the index).
    const kept = scored === match && q.groups.length === 1 && q.table === undefined && scoring.phrases.every((phrase) => this.scorer.keeps(phrase)) ? this.scorer.matchesOf(scoring.phrases) : undefined
    if (kept) {
      n = Math.min(kept.length, span)
      edge = n === 0 ? null : kept[n - 1]
    } else if (scored === match && q.groups.length > 1 && this.listed(scoring.phrases) <= OWN_SCORING_LISTS) {
      listedRows = this.st.probeRows.all(find, span)
      n = listedRows.length
      edge = n === 0 ? null : listedRows[n - 1]
    } else if (scored === match) {
      ({edge, n} = this.st.probe.get(find, span) ?? {edge: null, n: 0})
      if (q.groups.length > 1) this.wantCounts(scoring.phrases, window)
    } else {
      this.wantCounts(scoring.phrases, window)
      rows = this.st.probeRows.all(find, span)
      n = rows.length
      edge = n === 0 ? null : rows[n - 1]
    }
    if (n === 0 || edge === null) return {hits: [], total: 0}
    const rank = (to: number): StoreHit[] =>
      rows === undefined
        ? this.st.searchFrom.all(match, to, options.limit, options.offset)
        : this.st.searchWithin.all(scored, to, JSON.stringify(to === edge ? rows : rows.slice(0, ranked)), options.limit, options.offset)
    if (n < span) {
      const own = listedRows
        ? this.scorer.scoreWhole(scoring.phrases, parseTotals(this.st.averages.get()), n, listedRows)
        : n >= OWN_SCORING_MIN ? this.wholeScored(q, scoring.phrases, rows, n) : undefined
      if (own) return {hits: this.pageOf(own.rows, own.scores, options), total: n}
      return {hits: rows === undefined ? this.st.search.all(match, options.limit, options.offset) : rank(edge), total: n}
    }
    const {hi, lo} = this.st.bounds.get() ?? {hi: null, lo: null}
    if (hi === null || lo === null || edge >= hi) return {hits: rank(edge), total: n}
    const total = Math.max(span, Math.round((span * (hi - lo + 1)) / (Math.max(1, edge - lo + 1))))
    const whole = rows === undefined ? this.wholeEstimated(q, scoring.phrases, Math.min(ranked, span), span, edge) : undefined
    if (whole) return {estimated: true, hits: this.pageOf(whole.rows, whole.scores, options), total}
    const rankTo = ranked < span ? (rows ? rows[ranked - 1] : (this.st.probe.get(find, ranked)?.edge ?? edge)) : edge
    if ((rankTo - lo + 1) * OWN_SCORING_SHARE <= hi - lo + 1) {
      const own = rows ? rows.slice(0, ranked) : this.st.probeRows.all(find, ranked)
      return {estimated: true, hits: this.ownScored(own, scoring.phrases, options, (rankTo - lo + 1) / (hi - lo + 1)), total}
    }
    return {estimated: true, hits: rank(rankTo), total}
  }

  /**
   * The search as it is run: when the index holds no term longer than the last word that starts
   * with it, `"w"*` matches exactly the documents of `"w"` at exactly the same positions (every
   * term it expands to is `w`), so the prefix phrase is written `"w"` again. bm25 then weighs the
   * two phrases as before, bit for bit (same document count, same instances per row), but counts
   * and walks one list twice instead of merging every list of the prefix (through the prefix
   * index for 3-4 letters): at 1M documents the count of `"kakaka"*` cost 20 ms of CPU against
   * 10 for `"kakaka"`. `find` is the expression that only finds the rows (the probe): the word
   * once, or else its prefix alone (the word's documents are among the prefix's: one list merged
   * instead of two). A term left in the term list by deleted documents only keeps the prefix.
   */
  private asRun(q: MatchQuery): {find: string; q: MatchQuery} {
    const last = q.groups.at(-1)!
    if (last.length < 2) return {find: q.full, q}
    // Finding only: every document of "w" is one of "w"*, so the prefix alone finds the same rows.
    if (this.extends(last[0].slice(1, -1))) return {find: groupsExpression([...q.groups.slice(0, -1), [last[1]]], q.table), q}
    const groups = [...q.groups.slice(0, -1), [last[0], last[0]]]
    return {find: groupsExpression([...q.groups.slice(0, -1), [last[0]]], q.table), q: {full: groupsExpression(groups, q.table), groups, table: q.table}}
  }

  /** Whether a term longer than `word` and starting with it is in the index (either column). */
  private extends(word: string): boolean {
    let known = this.extended.get(word)
    if (known === undefined) {
      if (this.extended.size >= COUNTED_PHRASES) this.extended.clear()
      // Terms are ordered by their UTF-8 bytes: every longer term starting with `word` sorts at or
      // after `word` followed by the lowest byte but NUL, and the first term there tells.
      known = this.scorer.firstTermFrom(`${word}\u0001`)?.startsWith(word) ?? false
      this.extended.set(word, known)
    }
    return known
  }

  /**
   * The expression whose phrases score a search: the search's own, less the phrases that add
   * nothing. FTS5's bm25 first counts the documents holding each phrase of the query, walking the
   * phrase's whole list of documents (10-17 ms for a word in 96% of the documents at 100k, ten
   * times that at 1M), whatever the number of rows it then scores. Two kinds of phrase score
   * nothing:
   * - the table's token: its column weighs 0, so it adds exactly 0 to every row;
   * - a phrase in at least half the documents: FTS5 clamps its idf to 1e-6, so it adds at most
   *   ~2.2e-6 to a row's score (k1 + 1 times that). A word is left out only when all of its
   *   phrases are such (the prefix beside a rare exact word is not, or the word's other phrase
   *   would no longer match on its own).
   * The rows scored are still exactly the search's (searchWithin), so only rows whose scores
   * differ by less than ~2.2e-6 per word left out can change places (then by id); the scores
   * reported move by as much. A search whose every word is common keeps its full expression.
   */
  private scoredPhrases(q: MatchQuery): {expression: string; phrases: string[]} {
    if (q.groups.length === 1 && q.table === undefined) return {expression: q.full, phrases: q.groups.flat()}
    const rows = this.ftsRows()
    const kept = q.groups.filter((g) => !g.every((phrase) => this.common(phrase, rows)))
    if (kept.length === 0) return {expression: q.table === undefined ? q.full : groupsExpression(q.groups), phrases: q.groups.flat()}
    if (kept.length === q.groups.length && q.table === undefined) return {expression: q.full, phrases: q.groups.flat()}
    return {expression: groupsExpression(kept), phrases: kept.flat()}
  }

  /**
   * A search under the window scored by fts/score.ts from its phrases' whole lists, when they are
   * short: a single word's (its documents are the search's rows), or the scoring phrases' of a
   * search whose other words score nothing (`rows`: its rows), when the documents counted for
   * them (see common) add up to at most OWN_SCORING_LISTS. Undefined: ranked by bm25. (A search
   * of several words that all score, with such lists, is scored so over its rows whatever its
   * number of matches: bm25 counts the whole lists however few rows match.)
   */
  private wholeScored(q: MatchQuery, phrases: string[], rows: number[] | undefined, n: number): ReturnType<Bm25Scorer['scoreWhole']> {
    const totals = parseTotals(this.st.averages.get())
    if (rows === undefined) return q.groups.length === 1 && q.table === undefined ? this.scorer.scoreWhole(q.groups[0], totals, n) : undefined
    return this.listed(phrases) <= OWN_SCORING_LISTS ? this.scorer.scoreWhole(phrases, totals, n, rows) : undefined
  }

  /**
   * An estimated search of one word (no table) ranked by fts/score.ts from its phrases' whole
   * lists, when score.ts keeps them all (read by earlier searches in this state of the index):
   * the lists give the search's rows in rowid order (the probe's walk), so the first `ranked` of
   * them are the rows searchFrom or ownScored would rank, and each phrase's document count; bm25
   * instead counts both lists again on every search, and a second probe finds where the ranked
   * rows end. Lists not kept are not read for this: a first read of a word in 14% of 100k
   * documents with its prefix cost 7-8 ms against bm25's 5-6. Undefined (the other paths rank
   * it) when the lists do not give the probe's `edge` as their `span`-th row.
   */
  private wholeEstimated(q: MatchQuery, phrases: string[], ranked: number, span: number, edge: number): ReturnType<Bm25Scorer['scoreWhole']> {
    if (q.groups.length !== 1 || q.table !== undefined || !phrases.every((phrase) => this.scorer.keeps(phrase))) return undefined
    const matches = this.scorer.matchesOf(phrases)
    if (matches.length < span || matches[span - 1] !== edge) return undefined
    return this.scorer.scoreWhole(phrases, parseTotals(this.st.averages.get()), ranked, Array.from(matches.subarray(0, ranked)))
  }

  /**
   * The documents of `phrases` as last counted (see common), in all; infinite when one was not
   * counted. A list score.ts keeps (it read it whole in this state of the index) counts nothing:
   * scoring from it costs a pass over an array.
   */
  private listed(phrases: string[]): number {
    let listed = 0
    for (const phrase of new Set(phrases)) if (!this.scorer.keeps(phrase) && !this.scorer.counted(phrase)) listed += this.counted.get(phrase)?.n ?? Number.POSITIVE_INFINITY
    return listed
  }

  /**
   * Asks for the per-row counts (countJob) of the phrases of a search of several
   * words left to bm25 whose lists are too long to read whole (in more documents than the
   * window, or not counted yet): bm25 counts each such list again on every search naming it,
   * however few rows match. Not while the index is being written (countsQuietMs).
   */
  private wantCounts(phrases: string[], window: number): void {
    if (!this.countsQuiet) return
    for (const phrase of new Set(phrases)) {
      if (this.scorer.keeps(phrase) || this.scorer.counted(phrase)) continue
      if ((this.counted.get(phrase)?.n ?? Number.POSITIVE_INFINITY) > window * ASK_COUNTS_WINDOWS) this.scorer.wantCounts(phrase)
    }
  }

  /** Whether the index has not been written for countsQuietMs (per-row counts would be dropped at once otherwise). */
  get countsQuiet(): boolean {
    return Date.now() - this.changedAt >= this.countsQuietMs
  }

  /** Whether phrases wait for their per-row counts (countJob). */
  get countsPending(): boolean {
    return this.scorer.countsPending
  }

  /**
   * The next phrase whose per-row counts a search asked for, to be read by count-worker.ts from
   * this file, tagged with the state of the index now (this connection's writes and others'
   * commits: every one of them is committed, so the worker's snapshot, taken after this, is at
   * least this state). Undefined when none waits, or while a bulk build runs without a journal.
   */
  countJob(wanted?: string): undefined | {any: boolean; at: string; phrase: string} {
    if (this.bulk) return undefined
    return this.db.transaction(() => {
      this.sync()
      // `wanted`: a phrase of the warm-up (count-worker.ts warmCommonCounts), unless already kept.
      const phrase = wanted === undefined ? this.scorer.nextCount() : this.scorer.tried(wanted) ? undefined : wanted
      if (phrase === undefined) return undefined
      const word = phrase.slice(1, phrase.endsWith('*') ? -2 : -1)
      return {any: !TABLE_TOKENISH.test(word), at: `${this.rowLog.gen} ${this.version}`, phrase}
    })()
  }

  /**
   * Keeps the counts count-worker.ts read for `job` when no other connection wrote the index since
   * the job was asked (its writes are not in the log); otherwise drops them: counts of another
   * state would score rows by instances they no longer hold. `counts.gen`: the meta `gen` the
   * worker read in its snapshot, which says which of this connection's writes it holds (at least
   * those before the job); the later ones are applied to the counts when next used. Without it,
   * kept only when this connection did not write since the job was asked. True when kept.
   */
  countsDone(job: {at: string; phrase: string}, counts: null | (RowCounts & {gen?: null | string})): boolean {
    return this.db.transaction(() => {
      this.sync()
      const [asked, version] = job.at.split(' ').map(Number)
      if (version !== this.version) return false
      if (counts === null) {
        // Left to bm25, whatever this connection wrote since: bm25 is exact.
        this.scorer.keepCounts(job.phrase, null)
        return true
      }
      const read = this.snapshotGen(counts.gen, asked)
      const gen = read !== undefined && read >= asked && read <= this.rowLog.gen ? read : this.rowLog.gen === asked ? asked : undefined
      if (gen === undefined) return false
      this.scorer.keepCounts(job.phrase, {docs: counts.docs, f: counts.f}, gen)
      return true
    })()
  }

  /**
   * The generation of this connection's writes a worker's snapshot holds, from the meta `gen` it
   * read there (see epoch), for a job asked at generation `asked` when no other connection wrote
   * since (countsDone checks). Another epoch (or none) there: the last write before the snapshot
   * was another connection's, made before the job was asked (its commit would have moved
   * data_version otherwise), and none of this connection's came after it, so the snapshot is the
   * state the job was asked in.
   */
  private snapshotGen(value: null | string | undefined, asked: number): number | undefined {
    if (value === undefined) return undefined
    if (value === null || !value.startsWith(`${this.epoch} `)) return asked
    return Number(value.slice(this.epoch.length + 1))
  }

  /**
   * A page of `rows` (ascending, every one a match of the search, ending at `share` of the index)
   * as searchFrom / searchWithin would rank them by bm25 over `phrases`, scored by fts/score.ts:
   * the same scores to the bit, ordered by score then id. Only rows of exactly equal score across
   * the page's edge may be chosen differently (SQLite's sort keeps no set order among equal keys;
   * here the lower rowid wins).
   */
  private ownScored(rows: number[], phrases: string[], options: {limit: number; offset: number}, share: number): StoreHit[] {
    const totals = parseTotals(this.st.averages.get())
    const n = phrases.map((phrase) => this.documentsWith(phrase))
    const idf = n.map((docs) => this.scorer.idf(docs, totals.rows))
    // About the instances of each phrase up to the last row: its documents spread evenly, a few
    // repeated (a first read only: the walk reads on when short).
    const expected = n.map((docs) => Math.ceil(1.5 * docs * share) + 64)
    return this.pageOf(rows, this.scorer.score(rows, phrases, idf, totals, expected), options)
  }

  /**
   * The page of `rows` (ascending) by `scores` as the SQL ranking gives it: the rows by score,
   * equal scores by rowid (SQLite's ORDER BY ... LIMIT keeps the first rows it was given among
   * equal keys, and FTS5 gives them in rowid order), then the page by score and id.
   */
  private pageOf(rows: ArrayLike<number>, scores: Float64Array, options: {limit: number; offset: number}): StoreHit[] {
    return topRows(scores, options.offset + options.limit)
      .slice(options.offset)
      .map((i) => ({id: this.st.idOf.get(rows[i])!, score: scores[i]}))
      .sort((x, y) => y.score - x.score || Buffer.compare(Buffer.from(x.id), Buffer.from(y.id)))
  }

  /**
   * The documents holding a body phrase now: counted once until the next write. A phrase counted
   * here in more documents than wantCounts asks for gets its per-row counts asked for: they give
   * its document count from then on, kept across this connection's writes, where this count
   * (bm25's kind: every document of the phrase, 20-70 ms at 1M documents) is made again after
   * every write (the server's profile under 50 writes a second: a quarter of the search's CPU).
   */
  private documentsWith(phrase: string): number {
    let n = this.docsWith.get(phrase)
    if (n === undefined) {
      if (this.docsWith.size >= COUNTED_PHRASES) this.docsWith.clear()
      // A list score.ts keeps gives the count without a walk of the index.
      n = this.scorer.keeps(phrase) ? this.scorer.matchesOf([phrase]).length : this.scorer.countedDocs(phrase)
      if (n === undefined) {
        n = this.st.count.get(`body : ${phrase}`) ?? 0
        if (n > SEARCH_WINDOW * ASK_COUNTS_WINDOWS && this.countsQuiet) this.scorer.wantCounts(phrase)
      }
      this.docsWith.set(phrase, n)
    }
    return n
  }

  /**
   * The row count bm25 weighs by (its N): FTS5's own total, the first varint of its averages
   * record. Not the documents indexed: a contentless table's deletes leave it as it was.
   */
  private ftsRows(): number {
    return parseTotals(this.st.averages.get()).rows
  }


  /**
   * Whether at least half the rows (`rows`, bm25's N) hold `phrase` in the body: FTS5's bm25 then
   * clamps its idf (log((N - n + 0.5) / (n + 0.5)) <= 0) to 1e-6. Counts are kept between
   * searches and counted again only when the writes since could have moved the phrase across the
   * half: a write changes n and N by at most one each, so a count made `c` writes ago still
   * decides while |2n - N| > 3c. A count costs as much as the bm25 count it saves, so a common
   * word pays it once.
   */
  private common(phrase: string, rows: number): boolean {
    let c = this.counted.get(phrase)
    if (c === undefined || Math.abs(2 * c.n - rows) <= 3 * (this.written - c.at)) {
      if (this.counted.size >= COUNTED_PHRASES) this.counted.clear()
      c = {at: this.written, n: this.documentsWith(phrase)}
      this.counted.set(phrase, c)
    }
    return 2 * c.n >= rows
  }
}

/** Writes FTS_MERGE into the file when it holds other values (a file of an earlier version, or new). */
function setMergeSettings(db: Database.Database): void {
  const config = db.prepare<[], {k: string; v: unknown}>('SELECT k, v FROM text_config').all()
  for (const [k, v] of Object.entries(FTS_MERGE)) {
    // FTS5 takes its settings only as these special inserts, values inline (bound ones are refused).
    if (!config.some((c) => c.k === k && c.v === v)) db.exec(`INSERT INTO text(text, rank) VALUES ('${k}', ${v})`)
  }
}

/**
 * The indexes of the first `k` of `scores` by score, higher first, equal scores in index order
 * (the rows are ascending, so the lower rowid first): a pass keeping the best `k` in order,
 * instead of sorting every row (a search may rank 10,000 rows for a page of 10).
 */
export function topRows(scores: Float64Array, k: number): number[] {
  if (k > 64) return Array.from(scores.keys()).sort((x, y) => scores[y] - scores[x] || x - y).slice(0, k)
  const best: number[] = []
  for (let i = 0; i < scores.length; i++) {
    const s = scores[i]
    if (best.length === k && !(s > scores[best[k - 1]])) continue
    let at = best.length
    while (at > 0 && s > scores[best[at - 1]]) at--
    best.splice(at, 0, i)
    if (best.length > k) best.pop()
  }
  return best
}
