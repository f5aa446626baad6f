import {createHash} from 'node:crypto'
import {mkdirSync, rmSync} from 'node:fs'
import {resolve} from 'node:path'

import {BlobCache} from './cache.js'
import {CheckpointLoop} from './checkpoint-loop.js'
import {commitMessage, parseTrailers} from './commit-message.js'
import {diffJson} from './diff.js'
import {damageMessage, EngineError, isDiskFull, skipDamaged, withDiskFullRemedy} from './errors.js'
import {type BranchState, type DocEntry, emptyBranch, entryPath, forkBranch, loadBranchTree, tableState} from './branch-state.js'
import {FullTextIndex, type IndexProgress} from './fulltext.js'
import {git} from './git.js'
import {noteForeground, whenQuiet} from './background-gate.js'
import {hasCommitGraph, writeCommitGraph} from './commit-graph.js'
import {useGitSpawner} from './git-spawner.js'
import {HistoryIndex, type HistoryRecord} from './history-index.js'
import {DEFAULT_BRANCH, docPath, expiryPath, legacyDocPath, isCanonicalId, isCanonicalIdBytes, isReservedTable, parseId, type ParsedId, tableOf, validateBranch} from './ids.js'
import {ExpiryQueue} from './expiry.js'
import {type DataDirLayout, dataDirLayout} from './layout.js'
import {acquireInstanceLock, type InstanceLock, removeStaleGitLocks} from './lock.js'
import {loadBranches, prepareRepository, refHeads} from './open.js'
import {freeBytes, restartWithBackoff} from './writer-recovery.js'
import {pace} from './loop-turns.js'
import {nullLogger} from './logger.js'
import {BlobReader, CORRUPT_OBJECT} from './reader.js'
import {rollUp} from './roll-up.js'
import {HotDocs} from './hot-docs.js'
import {parseFrozen} from './parsed-read.js'
import {beginTransaction} from './transaction.js'
import type {IndexDefinition} from './field-index.js'
import {SecondaryIndexes} from './secondary-indexes.js'
import {clampLimit, pageIds} from './list-page.js'
import {type CommitFile, type CommitSpec, CommitWriter, type GitWriter} from './writer.js'
import {PackCommitWriter} from './pack-writer/commit-writer.js'
import {type WalEntry, type WalOp, WriteAheadLog} from './wal.js'
import type {
  AsOfOptions,
  BatchOp,
  Branch,
  BranchOption,
  Damage,
  DiffEntry,
  Doc,
  Engine,
  EngineDetails,
  EngineStats,
  GetManyOptions,
  HistoryOptions,
  HistoryResult,
  IndexInfo,
  IndexOptions,
  Json,
  ListOptions,
  ListResult,
  Logger,
  SearchOptions,
  SearchResult,
  Transaction,
  Version,
  WriteOptions,
  WriteResult,
} from './types.js'

export interface EngineOptions {
  /** Bytes of document bodies kept in memory for reads (default 64 MiB). */
  cacheBytes?: number
  /**
   * Quiet period before Git catches up with a burst of writes (default 50 ms); capped by
   * checkpointMaxDelayMs. Each checkpoint starts a new pack without delta bases: at 10 ms a steady
   * stream of group commits got one every ~8 writes and fast-import spent 2-3x the CPU per write
   * (docs/benchmarks.md, "Write path, issue 26").
   */
  checkpointDelayMs?: number
  /**
   * Longest time an acknowledged write waits before a Git checkpoint (default 1000 ms), for the
   * first checkpoint of a stream; under a sustained stream the wait doubles at each checkpoint up
   * to `checkpointSustainedMaxDelayMs` (see checkpoint-schedule.ts).
   */
  checkpointMaxDelayMs?: number
  /** Longest wait under a sustained stream of writes (default 8x checkpointMaxDelayMs). */
  checkpointSustainedMaxDelayMs?: number
  /** Committer of every commit (default `svc <svc@localhost>`). */
  committerEmail?: string
  committerName?: string
  /** Full-text index on/off (default on). */
  fullText?: boolean
  /** Per-document history index on/off (default on; off: history and as-of by time walk Git). */
  historyIndex?: boolean
  /** Documents per background indexing batch (default 2000). */
  indexBatchSize?: number
  /** Where the full-text index is stored (default `<dataDir>/index`). */
  indexDir?: string
  /** Interval of the index consistency check (default one hour); 0 disables it. */
  indexCheckIntervalMs?: number
  /** Unused since the full-text index lives on disk and saves as it goes; kept so existing callers still compile. */
  indexSaveIntervalMs?: number
  logger?: Logger
  /** The clock of expiries and commit times (epoch ms); tests inject one. */
  now?: () => number
  /** Largest document accepted, in bytes of JSON (default 1 MiB). */
  maxDocumentBytes?: number
  /** Back-pressure bound: writes wait while this many acknowledged writes are not yet in Git (default 10000). */
  maxPendingEntries?: number
  /**
   * Background work right after opening a repository of 5,000 documents or more (the history
   * index's catch-up, then the commit-graph write if it has none) waits for the full-text catch-up
   * and then for requests to pause this long (default 1000 ms), at most `startupMaxWaitMs` after
   * open (default 60 s); a history read ends the wait at once.
   */
  startupQuietMs?: number
  startupMaxWaitMs?: number
  /** Checkpoints between background geometric repacks that keep pack and loose-object counts low (default 64). */
  repackEveryCheckpoints?: number
  /**
   * Which writer turns writes into commits: `pack` (default), the in-process pack writer (a worker
   * thread writing the same commits straight into packs; issue 26), or `fast-import`, a long-lived
   * `git fast-import` child (the default until the pack writer measured ahead). Unset, the
   * environment variable SVC_WRITER chooses, so benches and the test suite can switch every
   * engine without a flag.
   */
  writer?: WriterKind
}

export type WriterKind = 'fast-import' | 'pack'

/** The writer an engine opened without `writer` uses: SVC_WRITER=fast-import, else the pack writer. */
export function defaultWriter(): WriterKind {
  const v = process.env.SVC_WRITER
  if (v === undefined || v === '' || v === 'pack') return 'pack'
  if (v === 'fast-import') return 'fast-import'
  // A typo must not silently measure or test the other writer.
  throw new EngineError('invalid_argument', `SVC_WRITER must be "fast-import" or "pack", not ${JSON.stringify(v)}`)
}

const INDEX_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/

export type {Damage, EngineDetails} from './types.js'

/** Start-up background work waits for the requests to pause this long (EngineOptions.startupQuietMs). */
const STARTUP_QUIET_MS = 1000
/** ... and at most this long after open (EngineOptions.startupMaxWaitMs). */
const STARTUP_MAX_WAIT_MS = 60_000
/** From this many documents at open, start-up maintenance (commit-graph, history build) waits for a pause in requests. */
const LARGE_REPOSITORY_DOCS = 5000

/**
 * What was sent to the Git writer since its last checkpoint, to send again to a restarted one:
 * a branch creation, or a commit by its write-ahead-log seq, with its whole spec unless `logged`
 * rebuilds the same from the log record. Each write's spec was kept here until its checkpoint
 * (1-8 s under a stream), and that was most of what a write promoted to V8's old generation
 * (docs/benchmarks.md, "What each write keeps alive until its checkpoint").
 */
interface Unsent {
  branch?: {from: string; name: string}
  idx: number
  seq?: number
  spec?: CommitSpec
}

/**
 * Checkpoints between background roll-ups (`repackEveryCheckpoints`). Not fewer: a roll-up costs
 * CPU in proportion to what it merges, more than the packs it removes cost fast-import (~1-2 us
 * per commit each); rolling up every 128,000 commits was measured and cost more (docs/benchmarks.md,
 * "svc sustained writes at 1M: fewer, larger checkpoints"), and so did every 16 or 8 checkpoints
 * with the roll-up at half its former CPU (roll-up.ts): fast-import saved less than the extra
 * roll-ups and restarts took ("svc sustained writes at 1M: the roll-up by object list").
 */
const REPACK_EVERY_CHECKPOINTS = 64

/**
 * Changed-path Bloom filters a background maintenance computes at most (`--max-new-filters`).
 * All of a quiet interval's commits (128 a checkpoint); under a stream of 128k writes between
 * maintenances, filters for all of them were 57 us of git's CPU per write, for walks that only run
 * with `historyIndex: false` or before the history index has caught up (docs/benchmarks.md, "The
 * background Git maintenance a write stream pays at 1M"). The start-up graph computes them all.
 */
const MAINTENANCE_NEW_FILTERS = 8192


/**
 * Commits after which a checkpoint is requested at once, when none is on its way: half the
 * back-pressure bound, so the writes arriving while it runs do not reach the bound, and at most
 * this many (each checkpoint is a pack that fast-import's later lookups walk: docs/benchmarks.md,
 * "svc sustained writes at 1M: fewer, larger checkpoints").
 */
const CHECKPOINT_EVERY_MAX = 8000

function blobSha(body: Buffer): string {
  return createHash('sha1').update(`blob ${body.length}\0`).update(body).digest('hex')
}

function serialize(doc: Doc): {body: Buffer; text: string} {
  const text = `${JSON.stringify(doc, null, 2)}\n`
  return {body: Buffer.from(text), text}
}

/**
 * A document this large has its write-ahead-log record made in a turn of the event loop of its
 * own, after the turn that serialised it (issue 24: a 900 KB put was one 30-50 ms turn).
 */
const LARGE_WRITE_BYTES = 256 * 1024

/**
 * The svc database over one data directory: documents as files in a bare Git repository
 * (`repo/`), a write-ahead log (`wal/`), and a full-text index (`index/`).
 */
/** Below this much free space a failed Git write is reported as a full disk; freeing this much ends a restart's pause. */
const DISK_FULL_BYTES = 1024 * 1024

export class GitEngine implements Engine {
  readonly dataDir: string
  /** Where each of the data directory's files is (engine/layout.ts). */
  readonly layout: DataDirLayout
  readonly repo: string
  private appending = 0
  /** Resolves when the last write waiting for a turn of the event loop has started (inWriteOrder). */
  private writeTurns: Promise<void> | undefined
  private branchesState = new Map<string, BranchState>()
  private cache: BlobCache
  private readonly hot: HotDocs
  private checkpoints: CheckpointLoop
  private checkpointsSinceRepack = 0
  /** Log sequence covered by the last checkpoint requested. */
  private requestedSeq = 0
  private repacking: Promise<void> | undefined
  /** Aborted at close, so a long background Git job does not hold the shutdown. */
  private readonly stopping = new AbortController()
  private failure: EngineError | undefined
  private checkpointedSeq = 0
  private closed = false
  /** Set on a follower (ops/follower.ts): every write is refused with this reason. */
  private readOnly: string | undefined
  private expiries = new ExpiryQueue()
  private sweepAt = 0
  private sweepNotBefore = 0
  private sweepTimer: NodeJS.Timeout | undefined
  private sweeping: Promise<void> | undefined
  private secondary: SecondaryIndexes
  /** Damaged documents with the entry that was found damaged: a later write replaces the entry. */
  private damaged = new Map<string, Damage & {entry: DocEntry}>()
  private recovering: Promise<void> | undefined
  private sendIdx = 0
  private unsent: Unsent[] = []
  /** Why the Git writer is down (set from its death until a restarted one has checkpointed). */
  private writerDown: string | undefined
  /** Free bytes when the writer last failed for a full disk (a restart is tried once more are free). */
  private freeWhenFull: number | undefined
  private writerRestarts = 0
  private readonly clock: () => number
  private index: FullTextIndex | undefined
  /** Which commits changed each document, per branch (history-index.ts). */
  private historyIndex: HistoryIndex | undefined
  /** Ends this engine's use of the git helper process (git-spawner.ts). */
  private releaseSpawner: (() => void) | undefined
  private lock!: InstanceLock
  private log: Logger
  private maxPending: number
  /** Commits after which a checkpoint is asked for at once (CHECKPOINT_EVERY_MAX). */
  private checkpointEvery: number
  private pendingQueue: Array<{branch: string; ids: string | string[]; seq: number}> = []
  private pressureWaiters: Array<() => void> = []
  private reader!: BlobReader
  /**
   * The tree of the last commit listed as of (`list` with `asOf`), for the next pages. Released a
   * minute after its last use: at a million documents it is as large as a branch's own state.
   */
  private asOfTree?: {commit: string; state: Promise<BranchState>}
  private asOfRelease?: NodeJS.Timeout
  private seq = 0
  private sentSeq = 0
  private wal!: WriteAheadLog
  private writer!: GitWriter

  private constructor(dataDir: string, private readonly options: EngineOptions) {
    this.dataDir = resolve(dataDir)
    this.layout = dataDirLayout(this.dataDir, {indexDir: options.indexDir})
    this.repo = this.layout.repo
    this.log = options.logger ?? nullLogger
    this.cache = new BlobCache(options.cacheBytes ?? 64 * 1024 * 1024)
    this.hot = new HotDocs()
    this.maxPending = options.maxPendingEntries ?? 10_000
    this.checkpointEvery = Math.max(1, Math.min(CHECKPOINT_EVERY_MAX, Math.floor(this.maxPending / 2)))
    this.clock = options.now ?? Date.now
    this.checkpoints = new CheckpointLoop(
      {
        behind: () => this.sentSeq > this.checkpointedSeq,
        checkpoint: () => this.checkpointNow(),
        closed: () => this.closed,
        failed: (error) => this.writerFailed(error),
        failure: () => this.failure,
        writerDown: () => this.writerDown !== undefined,
      },
      {
        delayMs: options.checkpointDelayMs ?? 50,
        maxDelayMs: options.checkpointMaxDelayMs ?? 1000,
        sustainedMaxDelayMs: options.checkpointSustainedMaxDelayMs ?? 8 * (options.checkpointMaxDelayMs ?? 1000),
      },
    )
    this.secondary = new SecondaryIndexes(this.layout.indexDefinitions, this.log, (b, id, e) => this.blob(e, b.name, id), () => this.closed)
  }

  static async open(dataDir: string, options: EngineOptions = {}): Promise<GitEngine> {
    const e = new GitEngine(dataDir, options)
    await e.start()
    return e
  }

  // ---- writes ---------------------------------------------------------------------------

  async asOf(id: string, options: AsOfOptions): Promise<Doc | undefined> {
    const p = parseId(id)
    const commit = await this.asOfCommit(this.branch(options.branch).name, options)
    if (!commit) return undefined
    await this.syncGit()
    return this.docVersion(commit, p)
  }

  async batch(ops: BatchOp[], options: WriteOptions = {}): Promise<WriteResult[]> {
    if (!Array.isArray(ops) || ops.length === 0) throw new EngineError('invalid_argument', 'a batch needs at least one operation')
    const branch = this.branch(options.branch)
    const walOps: WalOp[] = ops.map((o) => {
      if (o.op === 'put') {
        const {id, text} = this.prepare(o.doc, options)
        return {body: text, id, op: 'put', ...(o.keepExpiry || options.keepExpiry ? {keepExpiry: true} : {})}
      }
      if (o.op === 'delete') return {id: this.writable(o.id, options).id, op: 'delete'}
      if (o.op === 'expire') return {at: checkExpiry(o.at), id: this.writable(o.id, options).id, op: 'expire'}
      throw new EngineError('invalid_argument', `unknown batch operation ${JSON.stringify((o as {op?: unknown}).op)}`)
    })
    const seq = await this.write(branch.name, walOps, options)
    return walOps.map((o) => ({branch: branch.name, id: o.id, seq}))
  }

  begin(options: WriteOptions = {}): Transaction {
    // An unknown branch fails here, not at commit.
    const b = this.branch(options.branch)
    return beginTransaction(this, {...options, branch: b.name}, this.now)
  }

  async branches(): Promise<Branch[]> {
    this.checkOpen()
    await this.syncGit()
    const heads = await refHeads(this.repo)
    return [...this.branchesState.values()]
      .map((b) => ({head: heads.get(b.name) ?? null, name: b.name}))
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.checkpoints.cancel()
    clearTimeout(this.sweepTimer)
    clearTimeout(this.asOfRelease)
    this.asOfTree = undefined
    await this.wal.close()
    await this.recovering
    if (this.writerDown) this.failure ??= new EngineError('unavailable', `${this.writerDown}; acknowledged writes are safe in the write-ahead log and are replayed at the next start`)
    // The branch heads once every acknowledged write is in Git: the full-text index marks itself
    // closed cleanly at them (fulltext.ts close). Not on a follower, whose refs move under it.
    let heads: Map<string, string> | undefined
    try {
      await this.flushInternal()
      this.stopping.abort()
      await this.repacking
      if (this.index && !this.failure && !this.writerDown && this.readOnly === undefined) heads = await refHeads(this.repo).catch(() => undefined)
    } finally {
      await this.writer.close().catch((error: Error) => this.log.error('git fast-import did not exit cleanly', {error: error.message}))
      await this.index?.close(heads)
      await this.historyIndex?.close()
      await this.reader.close()
      this.lock.release()
      this.releaseSpawner?.()
    }
  }

  async count(options: BranchOption & {table?: string} = {}): Promise<number> {
    const b = this.branch(options.branch)
    const total = options.table === undefined ? b.docs.size : (b.tables.get(options.table)?.count ?? 0)
    return total - this.expiredCount(b, options.table)
  }

  /** Documents of the branch (of `table`) that have expired and are not swept yet. */
  private expiredCount(b: BranchState, table?: string): number {
    if (b.expiring.size === 0) return 0
    const now = this.now()
    let n = 0
    for (const id of b.expiring) {
      const at = b.docs.get(id)?.expiresAt
      if (at !== undefined && at <= now && (table === undefined || tableOf(id) === table)) n++
    }
    return n
  }

  async createBranch(name: string, options: {from?: string} = {}): Promise<Branch> {
    this.checkOpen()
    this.checkWritable()
    validateBranch(name)
    if (this.branchesState.has(name)) throw new EngineError('branch_exists', `branch ${name} already exists`)
    const from = this.branch(options.from)
    if (!from.exists && from.docs.size === 0) {
      throw new EngineError('invalid_argument', `branch ${from.name} has no commits yet: write a document before branching from it`)
    }
    this.sendBranch({from: from.name, name})
    const state = forkBranch(from, name)
    this.branchesState.set(name, state)
    for (const id of state.expiring) this.expiries.push({at: state.docs.get(id)!.expiresAt!, branch: name, id})
    this.scheduleSweep()
    for (const idx of from.indexes?.values() ?? []) this.secondary.add(state, idx.def)
    if (from.indexes?.size) this.secondary.save(this.branchesState.values())
    await this.checkpoints.force()
    this.historyIndex?.fork(from.name, name)
    this.index?.addBranch(name)
    const heads = await refHeads(this.repo)
    this.log.info('branch created', {branch: name, from: from.name})
    return {head: heads.get(name) ?? null, name}
  }

  async createIndex(table: string, field: string, options: IndexOptions = {}): Promise<IndexInfo> {
    this.checkWritable()
    const b = this.branch(options.branch)
    if (typeof table !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(table)) throw new EngineError('invalid_argument', `invalid table name ${JSON.stringify(table)}`)
    if (typeof field !== 'string' || field === '' || field.length > 256) throw new EngineError('invalid_argument', `invalid field name ${JSON.stringify(field)}`)
    if (field === 'id') throw new EngineError('invalid_argument', 'the id is always indexed: lookups by id never scan a table')
    const name = options.name ?? `${table}_${field.replaceAll(/[^A-Za-z0-9_]/g, '_')}_idx`.slice(0, 64)
    if (!INDEX_NAME.test(name)) throw new EngineError('invalid_argument', `invalid index name ${JSON.stringify(name)}: use letters, digits, _ . - (at most 64)`)
    const existing = b.indexes?.get(name)
    if (existing) {
      if (options.ifNotExists) return this.secondary.info(b, existing)
      throw new EngineError('conflict', `index ${JSON.stringify(name)} already exists on branch ${b.name}`)
    }
    const idx = this.secondary.add(b, {field, name, table})
    this.secondary.save(this.branchesState.values())
    await idx.ready
    this.log.info('index created', {branch: b.name, documents: idx.size, field, name, table})
    return this.secondary.info(b, idx)
  }

  async dropIndex(name: string, options: BranchOption & {ifExists?: boolean} = {}): Promise<boolean> {
    this.checkWritable()
    const b = this.branch(options.branch)
    if (!b.indexes?.has(name)) {
      if (options.ifExists) return false
      throw new EngineError('not_found', `index ${JSON.stringify(name)} does not exist on branch ${b.name}`)
    }
    b.indexes.delete(name)
    this.secondary.save(this.branchesState.values())
    this.log.info('index dropped', {branch: b.name, name})
    return true
  }

  /**
   * Ids (in id order) of the documents of `table` whose top-level `field` equals `value`, from a
   * secondary index; undefined when no usable index covers that field.
   */
  async findIds(table: string, field: string, value: Json, options: BranchOption = {}): Promise<string[] | undefined> {
    const b = this.branch(options.branch)
    const idx = this.secondary.on(b, table, field)
    if (!idx) return undefined
    await idx.ready
    if (idx.failed) return undefined
    return this.unexpired(b, idx.find(value))
  }

  /** `findIds` without waiting: undefined also while the index is still being built (a caller's fast path). */
  findIdsIfReady(table: string, field: string, value: Json, options: BranchOption = {}): string[] | undefined {
    const b = this.branch(options.branch)
    const idx = this.secondary.on(b, table, field)
    if (!idx?.built) return undefined
    return this.unexpired(b, idx.find(value))
  }

  private unexpired(b: BranchState, ids: string[]): string[] {
    return b.expiring.size === 0 ? ids : ids.filter((id) => this.visible(b.docs.get(id)))
  }

  async indexes(options: BranchOption & {table?: string} = {}): Promise<IndexInfo[]> {
    const b = this.branch(options.branch)
    return [...(b.indexes?.values() ?? [])]
      .filter((i) => options.table === undefined || i.def.table === options.table)
      .map((i) => this.secondary.info(b, i))
      .sort((x, y) => x.name.localeCompare(y.name))
  }

  async delete(id: string, options: WriteOptions = {}): Promise<WriteResult & {existed: boolean}> {
    const p = this.writable(id, options)
    const branch = this.branch(options.branch)
    const existed = this.visible(branch.docs.get(p.id))
    if (!existed) return {branch: branch.name, existed, id: p.id, seq: 0}
    const seq = await this.write(branch.name, [{id: p.id, op: 'delete'}], options)
    return {branch: branch.name, existed, id: p.id, seq}
  }

  now(): number {
    return this.clock()
  }

  /** Engine details for health, metrics and diagnose. */
  details(): EngineDetails {
    return {
      ...this.stats(),
      branches: [...this.branchesState.values()].map((b) => ({
        documents: b.docs.size,
        index: this.index?.status(b.name) ?? {documents: 0, pending: 0, state: 'disabled'},
        name: b.name,
      })),
      checkpointedSeq: this.checkpointedSeq,
      maxPendingEntries: this.maxPending,
      seq: this.seq,
      walBytes: this.wal.bytes,
      walFsyncs: this.wal.fsyncs,
      writerError: this.failure?.message ?? this.writerDown,
      writerRestarts: this.writerRestarts,
    }
  }

  /** Background reindex counters, or undefined when full-text search is off. */
  indexProgress(): IndexProgress | undefined {
    return this.index?.progress
  }

  /** Waits until the history index of every branch has caught up with its ref (built, when it was missing). */
  async historyCaughtUp(): Promise<void> {
    await this.historyIndex?.caughtUp(this.branchesState.keys())
  }

  /** Runs the full-text consistency check now and waits until the index has caught up. */
  async reindex(): Promise<void> {
    await this.index?.check()
  }

  async diff(id: string, options: BranchOption & {from: string; to?: string}): Promise<DiffEntry[]> {
    const p = parseId(id)
    this.branch(options.branch)
    const from = this.checkCommit(options.from)
    await this.syncGit()
    const before = await this.docVersion(from, p)
    const after = options.to === undefined ? await this.get(p.id, options) : await this.docVersion(this.checkCommit(options.to), p)
    return diffJson(before as Json | undefined, after as Json | undefined)
  }

  async flush(): Promise<void> {
    this.checkOpen()
    await this.flushInternal()
  }

  async get(id: string, options: BranchOption = {}): Promise<Doc | undefined> {
    const raw = await this.getRaw(id, options)
    return raw === undefined ? undefined : (JSON.parse(raw.toString('utf8')) as Doc)
  }

  async getMany(ids: string[], options: GetManyOptions = {}): Promise<Array<Doc | undefined>> {
    return Promise.all(ids.map((id) => this.get(id, options).catch((error: unknown) => skipDamaged(error, options.skipped))))
  }

  /** The stored JSON bytes of the current version (what REST sends without re-encoding). */
  async getRaw(id: string, options: BranchOption = {}): Promise<Buffer | undefined> {
    const entry = this.entry(id, options)
    if (!entry) return undefined
    return this.blob(entry, options.branch ?? DEFAULT_BRANCH, id)
  }

  /**
   * `getRaw` without waiting when the bytes are in memory (not yet checkpointed, or cached);
   * `false` when they must be read from Git with `getRaw`. Lets protocol servers answer a
   * pipeline of cached reads without a turn of the event loop per command.
   */
  getRawIfCached(id: string, options: BranchOption = {}): Buffer | false | undefined {
    const entry = this.entry(id, options)
    if (!entry) return undefined
    return entry.body ?? this.cache.get(entry.sha) ?? false
  }

  /**
   * `getRawIfCached` parsed (frozen, shared: callers copy before changing), in one lookup of the
   * document map for a hot id: its entry carries the parsed document (hot-docs.ts).
   */
  getParsedIfCached(id: string, options: BranchOption = {}): Doc | false | undefined {
    const entry = this.entry(id, options)
    if (!entry) return undefined
    const kept = entry.doc
    if (kept !== undefined) return kept
    const buf = entry.body ?? this.cache.get(entry.sha)
    if (buf === undefined) return false
    const doc = parseFrozen(buf)
    // An entry the document map made from a slot becomes the map's own object once it carries a document.
    if (this.hot.keep(entry, doc, buf.length)) this.branch(options.branch).docs.pin(isCanonicalId(id) ? id : parseId(id).id, entry)
    return doc
  }

  /**
   * True when the id these bytes spell is surely not on the branch (a canonical ASCII id that its
   * document map's filter rules out, doc-map.ts), so `getRawIfCached` of that string would answer
   * undefined; false means "maybe": ask by the string. Never throws: a closed engine or a missing
   * branch answer false and the caller's general path reports them. Lets a protocol server answer
   * a read of an absent key without making a string of it (issue 26).
   */
  absentIdBytes(b: Uint8Array, start: number, end: number, options: BranchOption = {}): boolean {
    if (this.closed) return false
    const state = this.branchesState.get(options.branch ?? DEFAULT_BRANCH)
    return state !== undefined && isCanonicalIdBytes(b, start, end) && state.docs.absentBytes(b, start, end)
  }

  private entry(id: string, options: BranchOption): DocEntry | undefined {
    const docs = this.branch(options.branch).docs
    // Only valid canonical ids are ever stored, so a hit on the id as given needs no parsing,
    // and neither does a miss on an id that is already canonical.
    const hit = docs.lookup(id) ?? (isCanonicalId(id) ? undefined : docs.lookup(parseId(id).id))
    return hit !== undefined && hit.expiresAt !== undefined && hit.expiresAt <= this.now() ? undefined : hit
  }

  /** An entry that exists and has not expired. */
  private visible(e: DocEntry | undefined): e is DocEntry {
    return e !== undefined && (e.expiresAt === undefined || e.expiresAt > this.now())
  }

  /** The parsed id of a write, refusing svc's own tables to writes that are not `system`. */
  private writable(id: unknown, options: WriteOptions): ParsedId {
    const p = parseId(id)
    if (!options.system && isReservedTable(p.table)) throw new EngineError('reserved', `table "${p.table}" is reserved for svc's own data`)
    return p
  }

  async expire(id: string, at: null | number, options: WriteOptions = {}): Promise<boolean> {
    const p = this.writable(id, options)
    const when = checkExpiry(at)
    const branch = this.branch(options.branch)
    if (!this.visible(branch.docs.get(p.id))) return false
    await this.write(branch.name, [{at: when, id: p.id, op: 'expire'}], options)
    return true
  }

  async expiresAt(id: string, options: BranchOption = {}): Promise<null | number | undefined> {
    const e = this.entry(id, options)
    return e === undefined ? undefined : (e.expiresAt ?? null)
  }

  async history(id: string, options: HistoryOptions = {}): Promise<HistoryResult> {
    const p = parseId(id)
    const branch = this.branch(options.branch)
    const limit = clampLimit(options.limit, 100, 1000)
    await this.syncGit()
    const start = options.cursor === undefined ? `refs/heads/${branch.name}` : this.checkCommit(options.cursor)
    if (!branch.exists && options.cursor === undefined && !(await refHeads(this.repo)).has(branch.name)) return {versions: []}
    // A repository written before the four-level layout may hold the document at its older path.
    const paths: [string, string] = [docPath(p), legacyDocPath(p)]
    const records = (await this.historyIndex?.versions(branch.name, paths, limit + 1, options.cursor)) ?? (await this.historyFromGit(start, paths, limit, options.cursor))
    const docs = await Promise.all(records.slice(0, limit).map((r) => this.docVersion(r.commit, p)))
    const versions: Version[] = records.slice(0, limit).map((r, i) => ({
      commit: r.commit,
      doc: docs[i] ?? null,
      meta: r.meta,
      op: docs[i] === undefined ? 'delete' : 'put',
      time: r.time,
    }))
    return {nextCursor: records.length > limit ? versions.at(-1)?.commit : undefined, versions}
  }

  /** Up to limit+1 commits that changed the paths, walking Git from `start` (what the history index answers without the walk). */
  private async historyFromGit(start: string, paths: [string, string], limit: number, cursor: string | undefined): Promise<HistoryRecord[]> {
    const {stdout} = await git(this.repo, ['log', '--format=%H%x00%ct%x00%B%x1e', `-n`, String(limit + 1 + (cursor ? 1 : 0)), start, '--', ...paths])
    let records = stdout.split('\x1e').map((r) => r.replace(/^\n/, '')).filter((r) => r.length > 0)
    if (cursor !== undefined) records = records.filter((r) => !r.startsWith(cursor)).slice(0, limit + 1)
    return records.map((r) => {
      const [commit, ct, message] = r.split('\0')
      const t = parseTrailers(message ?? '')
      return {commit, meta: t.meta, time: t.time ?? new Date(Number(ct) * 1000).toISOString()}
    })
  }

  async list(options: ListOptions = {}): Promise<ListResult> {
    if (options.asOf !== undefined) return this.listAsOf(options, options.asOf)
    const ids = this.listIds(options)
    const skipped: Damage[] = []
    const docs = await Promise.all(ids.ids.map((id) => this.get(id, options).catch((error: unknown) => skipDamaged(error, skipped))))
    return {docs: docs.filter((d): d is Doc => d !== undefined), nextCursor: ids.nextCursor, ...(skipped.length > 0 ? {skipped: skipped.map(({id, object}) => ({id, object}))} : {})}
  }

  /**
   * Documents found damaged (their Git object missing) since they were last read whole; one
   * leaves this list once it is rewritten, deleted, or its object is back (a restore, a fetch).
   */
  damage(): Damage[] {
    for (const [k, d] of this.damaged) {
      if (!this.branchesState.get(d.branch)?.docs.holds(d.id, d.entry)) this.damaged.delete(k)
    }
    return [...this.damaged.values()].map(({branch, id, object, reason}) => ({branch, id, object, reason}))
  }

  /** Ids in order for a listing page, without reading the documents. */
  listIds(options: ListOptions = {}): {ids: string[]; nextCursor?: string} {
    const b = this.branch(options.branch)
    return pageIds(b, options, b.expiring.size > 0 ? this.now() : 0)
  }

  async put(doc: Doc, options: WriteOptions = {}): Promise<WriteResult> {
    const {body, id, text} = this.prepare(doc, options)
    const branch = this.branch(options.branch)
    const seq = await this.write(branch.name, [{body: text, id, op: 'put', ...(options.keepExpiry ? {keepExpiry: true} : {})}], options, [body])
    return {branch: branch.name, id, seq}
  }

  async removeBranch(name: string): Promise<void> {
    this.checkOpen()
    this.checkWritable()
    const b = this.branch(name)
    if (b.name === DEFAULT_BRANCH) throw new EngineError('invalid_argument', `the default branch ${DEFAULT_BRANCH} cannot be removed`)
    await this.flushInternal()
    // fast-import would recreate the ref at its next checkpoint; a fresh process forgets it.
    await this.repacking
    await this.writer.close()
    this.writer = this.newWriter()
    this.branchesState.delete(name)
    // The ring would otherwise hold the removed branch's entries (and their documents) until it turns over.
    this.hot.clear()
    if (b.indexes?.size) this.secondary.save(this.branchesState.values())
    await git(this.repo, ['update-ref', '-d', `refs/heads/${name}`])
    await this.index?.dropBranch(name)
    await this.historyIndex?.drop(name)
    this.log.info('branch removed', {branch: name})
  }

  /**
   * Repacks every object into one pack (ops `compact`), in the slot of the background repack so
   * the two never overlap; fast-import is restarted first so its .keep files do not hold packs back.
   */
  async compact(): Promise<void> {
    this.checkOpen()
    await this.flushInternal()
    await this.repacking
    this.checkpointsSinceRepack = 0
    // -f: the roll-ups store what they merge without a delta search (roll-up.ts), and git reuses
    // whatever a pack holds whole without pairing it again, so only a fresh search wins that back.
    // At the background priority: that search is minutes of both cores at 1M documents (its
    // pack-objects threads), which the server's other users would otherwise wait behind; the
    // one who asked for the compaction waits longer instead.
    const run = this.writer.restart().then(() => git(this.repo, ['repack', '-a', '-d', '-f', '-q', '--no-write-bitmap-index'], {background: true}))
    this.repacking = run.then(
      () => undefined,
      () => undefined,
    ).finally(() => {
      this.repacking = undefined
    })
    await run
  }

  /**
   * Makes a new branch of a commit already in the repository (snapshot import on a running
   * server): sets the ref, loads its documents and indexes them in the background. Only new
   * branches: fast-import holds no state for them, so it cannot move the ref back.
   */
  async adoptBranch(name: string, commit: string): Promise<Branch> {
    return (await this.adoptBranches([{commit, name}]))[0]
  }

  /**
   * Several new branches, all or none: every tree is loaded first, then the refs are created in
   * one Git ref transaction, and only then does the engine serve them.
   */
  async adoptBranches(list: Array<{commit: string; name: string}>): Promise<Branch[]> {
    this.checkOpen()
    const loaded: Array<{commit: string; expiries: Array<{at: number; id: string}>; name: string; state: BranchState}> = []
    for (const {commit, name} of list) {
      validateBranch(name)
      if (this.branchesState.has(name) || loaded.some((l) => l.name === name)) throw new EngineError('branch_exists', `branch ${name} already exists`)
      const state = emptyBranch(name, true)
      const expiries: Array<{at: number; id: string}> = []
      await loadBranchTree(this.repo, this.reader, state, this.checkCommit(commit), this.log, (id, at) => expiries.push({at, id}))
      loaded.push({commit, expiries, name, state})
    }
    for (const l of loaded) if (this.branchesState.has(l.name)) throw new EngineError('branch_exists', `branch ${l.name} already exists`)
    for (const l of loaded) await this.numberAbove(l.commit)
    await git(this.repo, ['update-ref', '--stdin'], {input: `start\n${loaded.map((l) => `create refs/heads/${l.name} ${l.commit}\n`).join('')}prepare\ncommit\n`})
    for (const l of loaded) {
      this.branchesState.set(l.name, l.state)
      for (const e of l.expiries) this.expiries.push({...e, branch: l.name})
      this.index?.addBranch(l.name)
      this.log.info('branch adopted', {branch: l.name, commit: l.commit, documents: l.state.docs.size})
    }
    this.scheduleSweep()
    return loaded.map((l) => ({head: l.commit, name: l.name}))
  }

  /**
   * Numbers the next writes above `commit`'s `Svc-Seq`: a branch head taken from another database
   * carries that database's seq, and open replays only the log records above a branch head's seq,
   * so writes acknowledged on such a branch before their first checkpoint would be lost in a crash.
   */
  private async numberAbove(commit: string): Promise<void> {
    const text = (await this.reader.read(commit))?.toString('utf8') ?? ''
    this.seq = Math.max(this.seq, parseTrailers(text).seq ?? 0)
  }

  /**
   * Makes the engine a read-only follower (ops/follower.ts): every write, branch and index
   * change is refused with `reason` (code `read_only`) and expired documents are not swept here.
   */
  setReadOnly(reason: string | undefined): void {
    this.readOnly = reason
    if (!reason) this.scheduleSweep()
  }

  /**
   * A follower's update: points branch `name` at `commit` (already in the repository, fetched
   * from the leader), or removes it (`null`), and serves the new state: the branch's documents
   * are reloaded from that commit and the full-text index catches up on what changed only.
   */
  async followRef(name: string, commit: null | string): Promise<void> {
    this.checkOpen()
    validateBranch(name)
    const old = this.branchesState.get(name)
    if (commit === null) {
      if (!old || name === DEFAULT_BRANCH) return
    } else if (!old) {
      await this.adoptBranches([{commit, name}])
      return
    }
    const state = commit === null ? undefined : emptyBranch(name, true)
    if (state) await loadBranchTree(this.repo, this.reader, state, this.checkCommit(commit!), this.log, () => {})
    if (commit !== null) await this.numberAbove(commit)
    await this.flushInternal()
    // fast-import remembers each branch's tip; a fresh process forgets the old one.
    await this.repacking
    await this.writer.close()
    this.writer = this.newWriter()
    if (state) {
      await git(this.repo, ['update-ref', `refs/heads/${name}`, commit!])
      this.historyIndex?.touched()
      if (old) await this.secondary.carry(old, state)
      this.branchesState.set(name, state)
      void this.index?.check()
    } else {
      this.branchesState.delete(name)
      await git(this.repo, ['update-ref', '-d', `refs/heads/${name}`])
      this.index?.dropBranch(name)
      await this.historyIndex?.drop(name)
    }
    this.log.info('branch followed', {branch: name, commit, documents: state?.docs.size ?? 0})
  }

  async followIndexes(definitions: Record<string, IndexDefinition[]>): Promise<void> {
    this.checkOpen()
    await Promise.all(this.secondary.adopt(this.branchesState, definitions))
  }

  async search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    const b = this.branch(options.branch)
    if (!this.index) throw new EngineError('unavailable', 'full-text search is disabled')
    if (typeof query !== 'string' || query.trim() === '') throw new EngineError('invalid_argument', 'search needs a non-empty query')
    const limit = clampLimit(options.limit, 10, 1000)
    const offset = Math.max(0, Math.floor(Number(options.offset ?? 0)) || 0)
    // A large document the index worker is writing is waited for: search sees every acknowledged write.
    await this.index.settled(b.name)
    const {ids, incomplete, total, totalEstimated} = this.index.search(b.name, query, {limit, offset, table: options.table})
    const skipped: Damage[] = []
    const docs = await Promise.all(ids.map((h) => this.get(h.id, {branch: b.name}).catch((error: unknown) => skipDamaged(error, skipped))))
    const hits = ids.flatMap((h, i) => (docs[i] ? [{doc: docs[i]!, id: h.id, score: h.score}] : []))
    return {hits, total: total - (ids.length - hits.length), ...(totalEstimated ? {totalEstimated} : {}), ...(skipped.length > 0 ? {skipped: skipped.map(({id, object}) => ({id, object}))} : {}), ...(incomplete ? {index: incomplete} : {})}
  }

  stats(): EngineStats {
    const main = this.branchesState.get(DEFAULT_BRANCH)
    return {
      documents: main ? main.docs.size - this.expiredCount(main) : 0,
      indexDocuments: this.index?.count(DEFAULT_BRANCH) ?? 0,
      pendingEntries: this.pendingQueue.length,
    }
  }

  async tables(options: BranchOption = {}): Promise<string[]> {
    const b = this.branch(options.branch)
    return [...b.tables.entries()].filter(([t, v]) => v.count > this.expiredCount(b, t)).map(([t]) => t).sort()
  }

  // ---- internals ------------------------------------------------------------------------

  /** `bodies`: the encoded body of each put of `entry` when the caller has it (saves encoding it again). */
  private apply(entry: WalEntry, replay: boolean, bodies?: Array<Buffer | undefined>): void {
    const b = this.branchesState.get(entry.branch)
    if (!b) {
      this.log.error('write-ahead log entry for a missing branch skipped', {branch: entry.branch, seq: entry.seq})
      return
    }
    const files = []
    const ids: string[] = []
    // Whether `logged` makes this commit's spec again from the entry alone: each op a put or a
    // delete of the document's own path, no expiry file, no op skipped.
    let rebuildable = true
    for (const [i, op] of entry.ops.entries()) {
      const p = parseId(op.id)
      const old = b.docs.get(p.id)
      const path = entryPath(p, old)
      const t = tableState(b, p.table)
      // Both layouts spread a table over 65,536 leaf directories: the writer's estimate of what fast-import loads.
      const dirEntries = t.count >>> 16
      if (op.op === 'expire' || old?.expiresAt !== undefined || old?.path !== undefined || old?.legacy === true) rebuildable = false
      if (op.op === 'put') {
        const body = bodies?.[i] ?? Buffer.from(op.body ?? '')
        const sha = blobSha(body)
        if (old === undefined) {
          t.count++
          t.sorted = undefined
        }
        // An expiry already past when the put was accepted is not kept: that document was gone.
        const keep = op.keepExpiry && old?.expiresAt !== undefined && old.expiresAt > entry.time ? old.expiresAt : undefined
        if (old?.expiresAt !== undefined && keep === undefined) files.push({dirEntries, path: expiryPath(path, old.expiresAt)})
        this.setEntry(b, p.id, {body, seq: entry.seq, sha, ...(keep === undefined ? {} : {expiresAt: keep}), ...(old?.path ? {path: old.path} : {}), ...(old?.legacy ? {legacy: true} : {})})
        if (b.indexes) this.secondary.write(b, p.table, p.id, body)
        files.push({content: body, dirEntries, path})
        // The same bytes again (a SET of the value a key already holds) change nothing the
        // full-text index holds: the write that made `old` queued this very text.
        if (old?.sha !== sha) this.index?.onWrite(b.name, p.id, body, sha)
      } else if (op.op === 'expire') {
        if (!old) continue
        if (old.expiresAt !== undefined) files.push({dirEntries, path: expiryPath(path, old.expiresAt)})
        // The kept document stays with the old entry: HotDocs bounds only the entries it put it on.
        const {doc: _doc, expiresAt: _was, ...rest} = old
        this.setEntry(b, p.id, op.at === null || op.at === undefined ? rest : {...rest, expiresAt: op.at})
        if (op.at !== null && op.at !== undefined) files.push({content: Buffer.from(`${new Date(op.at).toISOString()}\n`), dirEntries, path: expiryPath(path, op.at)})
      } else {
        // The sweeper's delete is void when the document was rewritten or given another expiry since.
        if (op.ifExpiredAt !== undefined && old?.expiresAt !== op.ifExpiredAt) {
          rebuildable = false
          continue
        }
        if (b.docs.delete(p.id)) {
          t.count--
          t.sorted = undefined
        }
        b.expiring.delete(p.id)
        if (old?.expiresAt !== undefined) files.push({dirEntries, path: expiryPath(path, old.expiresAt)})
        if (b.indexes) this.secondary.write(b, p.table, p.id, undefined)
        files.push({dirEntries, path})
        this.index?.onWrite(b.name, p.id, undefined, undefined)
      }
      ids.push(p.id)
    }
    // A write of one document (nearly all) keeps its id, not an array of one, until its checkpoint.
    this.pendingQueue.push({branch: b.name, ids: ids.length === 1 ? ids[0] : ids, seq: entry.seq})
    // An entry replayed at open keeps its spec: a restart before the first checkpoint reads back nothing logged before this run.
    this.send(commitSpec(entry, files), entry.seq, !rebuildable || replay)
    this.sentSeq = entry.seq
    // Not while the writer is down: its restart sends the unsent commits again before any checkpoint.
    if (this.checkpoints.inFlight === 0 && this.writerDown === undefined && this.sentSeq - this.requestedSeq >= this.checkpointEvery) {
      void this.checkpointNow().catch((error: unknown) => this.writerFailed(error))
    } else if (!replay) this.checkpoints.schedule()
  }

  /** Replaces an entry, keeping the expiry bookkeeping in step. */
  private setEntry(b: BranchState, id: string, e: DocEntry): void {
    b.docs.set(id, e)
    if (e.expiresAt === undefined) b.expiring.delete(id)
    else {
      b.expiring.add(id)
      this.expiries.push({at: e.expiresAt, branch: b.name, id})
      if (this.sweepAt === 0 || e.expiresAt < this.sweepAt) this.scheduleSweep()
    }
  }

  /** Arms the timer for the earliest pending expiry. */
  private scheduleSweep(): void {
    // A follower's documents expire on its leader, whose deletions arrive with the next fetch.
    if (this.closed || this.readOnly) return
    const next = this.expiries.peek()
    clearTimeout(this.sweepTimer)
    this.sweepTimer = undefined
    this.sweepAt = 0
    if (!next || this.sweeping) return
    this.sweepAt = next.at
    // setTimeout's longest delay is 2^31-1 ms; a later expiry re-arms the timer when it fires.
    const delay = Math.min(Math.max(0, next.at - this.now(), this.sweepNotBefore - this.now()), 2_147_000_000)
    this.sweepTimer = setTimeout(() => void this.sweep(), delay)
    this.sweepTimer.unref()
  }

  /** Removes the documents whose expiry has passed now, without waiting for the sweep timer. */
  async sweepExpired(): Promise<void> {
    await this.sweeping
    await this.sweep()
  }

  /**
   * Deletes every document whose expiry has passed: one commit per branch, origin `expiry`.
   * Reads hide an expired document already; this makes its removal part of the history.
   */
  private sweep(): Promise<void> {
    if (this.closed) return Promise.resolve()
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = undefined
      this.scheduleSweep()
    })
    return this.sweeping
  }

  private async sweepOnce(): Promise<void> {
    clearTimeout(this.sweepTimer)
    this.sweepTimer = undefined
    this.sweepAt = 0
    const now = this.now()
    const byBranch = new Map<string, WalOp[]>()
    const taken: Array<{at: number; branch: string; id: string}> = []
    for (let top = this.expiries.peek(); top && top.at <= now; top = this.expiries.peek()) {
      this.expiries.pop()
      const e = this.branchesState.get(top.branch)?.docs.get(top.id)
      if (e?.expiresAt !== top.at) continue
      taken.push(top)
      const ops = byBranch.get(top.branch) ?? byBranch.set(top.branch, []).get(top.branch)!
      ops.push({id: top.id, ifExpiredAt: top.at, op: 'delete'})
    }
    try {
      for (const [branch, ops] of byBranch) {
        // Bounded batches keep one sweep commit small however many keys expire at once.
        for (let i = 0; i < ops.length; i += 1000) await this.write(branch, ops.slice(i, i + 1000), {meta: {origin: 'expiry'}})
      }
      if (taken.length > 0) this.log.debug('expired documents removed', {documents: taken.length})
    } catch (error) {
      if (this.closed) return
      // Reads keep hiding them; the next sweep tries again (the writer may be restarting).
      for (const t of taken) this.expiries.push(t)
      this.sweepNotBefore = this.now() + 1000
      this.log.warn('expiry sweep failed; retrying in a second', {error: (error as Error).message})
    }
  }

  private async blob(entry: DocEntry, branch: string, id: string): Promise<Buffer> {
    if (entry.body) return entry.body
    const cached = this.cache.get(entry.sha)
    if (cached) return cached
    let body: Buffer | undefined
    let reason = 'is missing from the repository'
    try {
      body = await this.reader.read(entry.sha)
    } catch (error) {
      if ((error as {reason?: string}).reason !== CORRUPT_OBJECT) throw error
      reason = `is corrupt (${(error as Error).message})`
    }
    // What Git hands back is checked once, before it is cached: bytes that are not JSON (a foreign
    // or damaged blob) are reported as damage instead of reaching a client as a document.
    const notJson = body === undefined ? undefined : jsonProblem(body)
    if (notJson !== undefined) reason = `is not valid JSON (${notJson})`
    const key = `${branch}\0${id}`
    if (body === undefined || notJson !== undefined) {
      const d: Damage = {branch, id: id.includes(':') ? id : parseId(id).id, object: entry.sha, reason}
      if (!this.damaged.has(key)) this.log.error('a document is damaged: its git object cannot be read', {...d})
      this.damaged.set(key, {...d, entry})
      throw Object.assign(
        new EngineError('damaged', damageMessage(d)),
        {damage: d},
      )
    }
    if (this.damaged.size > 0) this.damaged.delete(key)
    this.cache.set(entry.sha, body)
    return body
  }

  private branch(name: string | undefined): BranchState {
    this.checkOpen()
    // Every request passes here: background work gives way while they keep coming (background-gate.ts).
    noteForeground()
    const n = name ?? DEFAULT_BRANCH
    const b = this.branchesState.get(n)
    if (!b) throw new EngineError('branch_not_found', `branch ${JSON.stringify(n)} does not exist`)
    return b
  }

  private checkCommit(c: unknown): string {
    if (typeof c !== 'string' || !/^[0-9a-f]{4,40}$/.test(c)) throw new EngineError('invalid_argument', `invalid commit id ${JSON.stringify(c)}`)
    return c
  }

  private checkWritable(): void {
    if (this.readOnly) throw new EngineError('read_only', this.readOnly)
  }

  private checkOpen(): void {
    if (this.closed) throw new EngineError('closed', 'engine is closed')
  }

  /** The commit an as-of read looks at: the one given, or the branch's last at the time given. */
  private async asOfCommit(branch: string, at: Omit<AsOfOptions, 'branch'>): Promise<string | undefined> {
    if (at.commit !== undefined) return this.checkCommit(at.commit)
    if (at.time !== undefined) return this.commitAt(branch, at.time)
    throw new EngineError('invalid_argument', 'as-of needs a commit or a time')
  }

  /**
   * A listing page of the branch as it stood at a commit or a time. The tree of that commit is
   * read once (`git ls-tree`) and kept for the next pages of the same listing.
   */
  private async listAsOf(options: ListOptions, at: Omit<AsOfOptions, 'branch'>): Promise<ListResult> {
    const branch = this.branch(options.branch)
    const commit = await this.asOfCommit(branch.name, at)
    if (!commit) return {docs: []}
    await this.syncGit()
    if (this.asOfTree?.commit !== commit) {
      const state = emptyBranch(branch.name, true)
      const loading = loadBranchTree(this.repo, this.reader, state, commit, this.log, () => {}).then(() => state)
      this.asOfTree = {commit, state: loading}
      loading.catch(() => {
        if (this.asOfTree?.state === loading) this.asOfTree = undefined
      })
    }
    clearTimeout(this.asOfRelease)
    this.asOfRelease = setTimeout(() => (this.asOfTree = undefined), 60_000)
    this.asOfRelease.unref()
    const state = await this.asOfTree.state.catch((error: unknown) => {
      throw new EngineError('not_found', `commit ${commit} cannot be listed: ${(error as Error).message.split('\n')[0]}`)
    })
    const page = pageIds(state, options, at.time === undefined ? 0 : parseTime(at.time))
    const skipped: Array<{id: string; object: string}> = []
    const bodies = await Promise.all(page.ids.map((id) => this.reader.read(state.docs.get(id)!.sha).catch(() => undefined)))
    const docs: Doc[] = []
    for (const [i, id] of page.ids.entries()) {
      const body = bodies[i]
      const problem = body === undefined ? 'missing' : jsonProblem(body)
      if (problem === undefined) docs.push(JSON.parse(body!.toString('utf8')) as Doc)
      else skipped.push({id, object: state.docs.get(id)!.sha})
    }
    return {docs, nextCursor: page.nextCursor, ...(skipped.length > 0 ? {skipped} : {})}
  }

  private async commitAt(branch: string, time: number | string): Promise<string | undefined> {
    const t = parseTime(time)
    await this.syncGit()
    const indexed = await this.historyIndex?.commitAt(branch, t)
    if (indexed !== undefined) return indexed ?? undefined
    if (!(await refHeads(this.repo)).has(branch)) return undefined
    // Git dates have second precision; the Svc-Time trailer has milliseconds. The commits of the
    // second after t pass --until but not the trailer: at a few thousand writes a second they fill
    // more than one page of 200, so the walk goes on page by page until one is old enough.
    for (let skip = 0; ; skip += 200) {
      const {stdout} = await git(this.repo, ['log', '--format=%H%x00%B%x1e', `--until=${Math.floor(t / 1000) + 1}`, '-n', '200', '--skip', String(skip), `refs/heads/${branch}`])
      let seen = 0
      for (const r of stdout.split('\x1e')) {
        const rec = r.replace(/^\n/, '')
        if (!rec) continue
        seen++
        const [commit, message] = rec.split('\0')
        const tt = parseTrailers(message ?? '').time
        if (tt === undefined || Date.parse(tt) <= t) return commit
      }
      if (seen < 200) return undefined
    }
  }

  /** The document at `commit`, wherever that commit keeps it (docPath, or legacyDocPath in an older repository). */
  private async docVersion(commit: string, p: ParsedId): Promise<Doc | undefined> {
    return (await this.docAt(commit, docPath(p))) ?? this.docAt(commit, legacyDocPath(p))
  }

  private async docAt(commit: string, path: string): Promise<Doc | undefined> {
    const body = await this.reader.read(`${commit}:${path}`)
    if (body === undefined) return undefined
    try {
      return JSON.parse(body.toString('utf8')) as Doc
    } catch {
      // A commit id that is not a commit, or a path holding something else, is not a document version.
      return undefined
    }
  }

  private committer(): string {
    const clean = (s: string): string => s.replace(/[<>\n\r]/g, '')
    return `${clean(this.options.committerName ?? 'svc')} <${clean(this.options.committerEmail ?? 'svc@localhost')}>`
  }

  private existingBranches(): Set<string> {
    return new Set([...this.branchesState.values()].filter((b) => b.exists).map((b) => b.name))
  }

  private async flushInternal(): Promise<void> {
    if (this.sentSeq > this.checkpointedSeq) await this.checkpoints.force()
  }

  private prepare(doc: Doc, options: WriteOptions): {body: Buffer; id: string; text: string} {
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
      throw new EngineError('invalid_document', 'a document must be a JSON object')
    }
    const {id} = this.writable(doc.id, options)
    // The canonical id goes first so every stored file starts with it.
    const {id: _ignored, ...fields} = doc
    const {body, text} = serialize({id, ...fields} as Doc)
    const max = this.options.maxDocumentBytes ?? 1024 * 1024
    if (body.length > max) throw new EngineError('too_large', `document ${id} is ${body.length} bytes; the limit is ${max}`)
    return {body, id, text}
  }

  /**
   * Asks fast-import for a checkpoint covering everything sent so far. Only a caller that waits
   * (flush, history, close) starts one while another is on its way; they complete in order.
   */
  private async checkpointNow(): Promise<void> {
    const target = this.sentSeq
    const mark = this.sendIdx
    this.requestedSeq = target
    const started = Date.now()
    const generation = await this.checkpoints.ask(() => this.writer.checkpoint())
    this.checkpointedSeq = Math.max(this.checkpointedSeq, target)
    let u = 0
    while (u < this.unsent.length && this.unsent[u].idx <= mark) u++
    this.unsent.splice(0, u)
    let n = 0
    while (n < this.pendingQueue.length && this.pendingQueue[n].seq <= target) {
      const p = this.pendingQueue[n++]
      const b = this.branchesState.get(p.branch)
      if (!b) continue
      b.exists = true
      if (typeof p.ids === 'string') this.settleWritten(b, p.ids, target)
      else for (const id of p.ids) this.settleWritten(b, id, target)
    }
    this.pendingQueue.splice(0, n)
    for (const w of this.pressureWaiters.splice(0)) w()
    this.checkpoints.completed(generation, this.sentSeq > this.checkpointedSeq)
    this.historyIndex?.touched()
    this.log.debug('checkpoint', {ms: Date.now() - started, seq: target})
    if (++this.checkpointsSinceRepack >= (this.options.repackEveryCheckpoints ?? REPACK_EVERY_CHECKPOINTS)) void this.maintain()
    // Writes that arrived while this one was on its way get the next checkpoint.
    if (this.checkpoints.inFlight === 0 && !this.failure && this.sentSeq > this.checkpointedSeq) this.checkpoints.schedule()
    await this.wal.release(this.checkpointedSeq)
  }

  /** A write's body, now in Git, moved to the blob cache; its entry kept as a slot from then on. */
  private settleWritten(b: BranchState, id: string, target: number): void {
    const e = b.docs.get(id)
    if (e?.body && e.seq <= target) {
      this.cache.set(e.sha, e.body)
      e.body = undefined
      b.docs.settle(id, e)
    }
  }

  /**
   * Hands one commit to the Git writer, keeping it until a checkpoint covers it: its
   * write-ahead-log seq, and the spec only with `keepSpec` (else `logged` rebuilds it from the record).
   */
  private send(spec: CommitSpec, seq: number, keepSpec: boolean): void {
    const item: Unsent = keepSpec ? {idx: ++this.sendIdx, seq, spec} : {idx: ++this.sendIdx, seq}
    this.unsent.push(item)
    if (this.writerDown) return
    try {
      this.writer.commit(spec)
    } catch (error) {
      this.writerFailed(error)
    }
  }

  /** Hands a branch creation to the Git writer, keeping it until a checkpoint covers it. */
  private sendBranch(branch: {from: string; name: string}): void {
    const item: Unsent = {branch, idx: ++this.sendIdx}
    this.unsent.push(item)
    if (this.writerDown) return
    try {
      this.dispatch(this.writer, item, new Map())
    } catch (error) {
      this.writerFailed(error)
    }
  }

  private dispatch(w: GitWriter, u: Unsent, logged: Map<number, CommitSpec>): void {
    if (u.branch) w.createBranch(u.branch.name, u.branch.from)
    else w.commit(this.specOf(u, logged))
  }

  /** An unsent commit's spec, kept or rebuilt; never missing: a write acknowledged and not sent would be lost at the next checkpoint. */
  private specOf(u: Unsent, logged: Map<number, CommitSpec>): CommitSpec {
    const spec = u.spec ?? logged.get(u.seq!)
    if (!spec) throw new EngineError('unavailable', `write-ahead log record ${u.seq} not found to send again to the Git writer`)
    return spec
  }

  /**
   * The specs of the unsent commits kept as a seq only, made again from their write-ahead-log
   * records as `apply` made them (only records whose spec depends on nothing but the record are
   * kept so). Read from disk: this runs only when the writer restarts.
   */
  private async logged(items: Unsent[]): Promise<Map<number, CommitSpec>> {
    const out = new Map<number, CommitSpec>()
    let first: number | undefined
    for (const u of items) if (u.seq !== undefined && !u.spec && (first === undefined || u.seq < first)) first = u.seq
    if (first === undefined) return out
    const wanted = new Set(items.flatMap((u) => (u.seq === undefined || u.spec ? [] : [u.seq])))
    for (const entry of await this.wal.since(first - 1)) {
      if (!wanted.has(entry.seq)) continue
      const files: CommitFile[] = entry.ops.map((op) => {
        const p = parseId(op.id)
        const dirEntries = (this.branchesState.get(entry.branch)?.tables.get(p.table)?.count ?? 0) >>> 16
        return op.op === 'put' ? {content: Buffer.from(op.body ?? ''), dirEntries, path: docPath(p)} : {dirEntries, path: docPath(p)}
      })
      out.set(entry.seq, commitSpec(entry, files))
    }
    return out
  }

  private newWriter(): GitWriter {
    if ((this.options.writer ?? defaultWriter()) === 'pack') {
      // The pack writer has no child process to record (its worker thread dies with svc). A pid
      // file a fast-import run left (the open already waited for that process) is removed: the
      // next start would otherwise wait for, and kill, whatever fast-import reuses that pid.
      rmSync(this.layout.writerPid, {force: true})
      return new PackCommitWriter(this.repo, () => this.existingBranches(), this.committer(), undefined, (error) => this.writerFailed(error))
    }
    return new CommitWriter(this.repo, () => this.existingBranches(), this.committer(), this.layout.writerPid, (error) => this.writerFailed(error))
  }

  /** Whether writes can be made now (the liveness a supervisor probes through `/healthz`). */
  canWrite(): {ok: boolean; reason?: string} {
    if (this.closed) return {ok: false, reason: 'engine is closed'}
    const reason = this.failure?.message ?? this.writerDown
    return reason ? {ok: false, reason} : {ok: true}
  }

  /**
   * Git's own words for a full disk vary by the write that failed ("unable to write loose object
   * file", "sha1 file write error"): when the data directory's filesystem is full, say so, with
   * the remedy, whatever Git printed.
   */
  private writerMessage(error: unknown): string {
    const message = (error as Error).message
    if (isDiskFull(message)) return withDiskFullRemedy(message)
    // When the directory itself is gone, the message stands as Git wrote it.
    const free = freeBytes(this.repo)
    if (free !== undefined && free < DISK_FULL_BYTES) return withDiskFullRemedy(`${message} (No space left on device)`)
    return message
  }

  /** Remembers the free space when the writer failed for a full disk, so freeing space ends the restart's pause. */
  private noteFailure(message: string): void {
    this.freeWhenFull = isDiskFull(message) ? (freeBytes(this.repo) ?? 0) : undefined
  }

  /** Whether space was freed since the writer last failed for a full disk. */
  private spaceFreed(): boolean {
    if (this.freeWhenFull === undefined) return false
    const free = freeBytes(this.repo)
    return free !== undefined && free >= this.freeWhenFull + DISK_FULL_BYTES
  }

  /**
   * The Git writer died (killed, crashed, or it refused a command): start a new one and send it
   * every commit not yet covered by a checkpoint. Acknowledged writes are in the write-ahead log
   * and in memory meanwhile, so nothing is lost; writes wait (briefly) or are refused until then.
   */
  private writerFailed(error: unknown): void {
    if (this.failure || this.recovering) return
    const message = this.writerMessage(error)
    if (this.closed) {
      this.failure = new EngineError('unavailable', `git writer failed: ${message}; acknowledged writes are safe in the write-ahead log and are replayed at the next start`)
      this.checkpoints.rejectWaiters(this.failure)
      for (const w of this.pressureWaiters.splice(0)) w()
      return
    }
    this.writerDown = `git writer failed: ${message}`
    this.noteFailure(message)
    this.log.error('git writer failed; restarting it and sending it the writes not yet in git', {error: message, writes: this.unsent.length})
    this.recovering = this.recoverWriter().finally(() => {
      this.recovering = undefined
    })
  }

  private recoverWriter(): Promise<void> {
    return restartWithBackoff({
      attempt: async (attempt) => {
        await this.writer.kill()
        await this.repacking
        for (const p of removeStaleGitLocks(this.repo, true)) this.log.warn('removed git lock file left by the dead writer', {path: p})
        // Started at once; nothing is sent to it, nor a checkpoint asked of it, while the writer is down.
        const w = this.newWriter()
        this.writer = w
        // A checkpoint the dead writer finished without telling us already put its commits in
        // Git: they are not sent again (one commit per write).
        // Not when a branch creation is among them: made again, it would start the branch afresh
        // from its source and drop the commits skipped (sent again, they stay, as before).
        const inGit = this.unsent.some((u) => u.branch) ? undefined : await this.gitHeads()
        if (this.writer !== w) return 'retry'
        let resent = await this.resend(w, 0, inGit)
        if (resent === undefined) return 'retry'
        // The checkpoint proves the new process took every commit sent again.
        await w.checkpoint()
        if (this.writer !== w) return 'retry'
        // Writes acknowledged meanwhile were only queued (the writer was down): send them before the next checkpoint counts them in Git.
        resent = await this.resend(w, resent)
        if (resent === undefined) return 'retry'
        // No await from resend's last look at `unsent` to here: every write queued is sent.
        this.writerRestarts++
        this.writerDown = undefined
        this.log.warn('git writer restarted', {attempt, restarts: this.writerRestarts})
        for (const r of this.pressureWaiters.splice(0)) r()
        void this.checkpoints.run()
        return 'done'
      },
      closed: () => this.closed,
      retryNow: () => this.spaceFreed(),
      failed: (attempt, error) => {
        const message = this.writerMessage(error)
        this.writerDown = `git writer failed: ${message}`
        this.noteFailure(message)
        this.log.error('git writer restart failed; trying again', {attempt, error: error.message})
      },
    })
  }

  /**
   * Sends the restarted writer `w` every unsent item after index `after`, in order, until none is
   * left (writes acknowledged while their records were read back are sent too); the last index
   * sent, or undefined when `w` was replaced meanwhile. Returns in the same synchronous run as its
   * last look at `unsent`, so its caller can mark the writer up before any other write is applied.
   */
  private async resend(w: GitWriter, after: number, inGit?: Map<string, {message: string; seq: number}>): Promise<number | undefined> {
    for (;;) {
      const todo = this.unsent.filter((u) => u.idx > after)
      if (todo.length === 0) return after
      const logged = todo.some((u) => u.spec === undefined && u.branch === undefined) ? await this.logged(todo) : new Map<number, CommitSpec>()
      if (this.writer !== w) return undefined
      // A checkpoint of the dead writer that completed while the records were read took its items out: they are in Git.
      const head = this.unsent[0]?.idx ?? Infinity
      const inGitUpTo = inGit ? this.sentBefore(todo, logged, inGit) : undefined
      for (const u of todo) {
        if (u.idx < head) continue
        if (u.branch === undefined && inGitUpTo && u.seq! <= (inGitUpTo.get(this.specOf(u, logged).branch) ?? 0)) continue
        this.dispatch(w, u, logged)
      }
      after = todo.at(-1)!.idx
    }
  }

  /** Each branch's head commit in Git: its message and the write-ahead-log seq it names (0 for none). */
  private async gitHeads(): Promise<Map<string, {message: string; seq: number}>> {
    const out = new Map<string, {message: string; seq: number}>()
    for (const [name, sha] of await refHeads(this.repo)) {
      const text = (await this.reader.read(sha))?.toString('utf8') ?? ''
      const at = text.indexOf('\n\n')
      out.set(name, {message: at === -1 ? '' : text.slice(at + 2), seq: parseTrailers(text).seq ?? 0})
    }
    return out
  }

  /**
   * Per branch, the seq up to which the unsent commits are already in Git: a branch whose head is
   * one of them (same seq, same message) got every one before it too. A head with a seq of
   * another history (an adopted commit) matches none, and nothing of its branch is skipped.
   */
  private sentBefore(items: Unsent[], logged: Map<number, CommitSpec>, heads: Map<string, {message: string; seq: number}>): Map<string, number> {
    const out = new Map<string, number>()
    for (const u of items) {
      if (u.branch !== undefined) continue
      const spec = this.specOf(u, logged)
      const head = heads.get(spec.branch)
      if (head && head.seq === u.seq && head.message.trimEnd() === spec.message.trimEnd()) out.set(spec.branch, u.seq)
    }
    return out
  }

  /**
   * Each checkpoint leaves a small pack (or loose objects); a geometric repack merges them
   * incrementally, so reads and `git` commands stay fast without a full gc.
   */
  private maintain(): Promise<void> {
    this.checkpointsSinceRepack = 0
    // fast-import keeps a .keep file on each of its packs until it exits, and repack skips kept packs.
    this.repacking ??= this.writer
      .restart()
      // What `git repack -d --geometric=2 --window=0` merges, from the packs' object lists (roll-up.ts).
      .then(() => rollUp(this.repo))
      // The fast-import started above listed the packs before the roll-up, and would look every
      // new object up in the merged-away ones too until its next restart: a fresh one sees the few left.
      .then(() => this.writer.restart())
      .then(() => this.writeGraph(MAINTENANCE_NEW_FILTERS))
      .then(() => this.log.debug('repacked'))
      .catch((error: Error) => this.log.warn('background repack failed', {error: error.message}))
      .finally(() => {
        this.repacking = undefined
      })
    return this.repacking
  }

  /**
   * The start-up commit-graph write: seconds of git's CPU at 100k commits, about a minute at 1M,
   * and one process that cannot be held once it runs. Started at open it shared the cores with
   * the first searches and reads (issue 13: every search of the first seconds ran beside it), so
   * it waits for the full-text and history catch-ups and a pause in requests, and runs within a
   * minute under steady load all the same. The wait is outside the repack slot: nothing queues behind it.
   */
  private async startupGraph(): Promise<void> {
    const o = this.options
    await whenQuiet(o.startupQuietMs ?? STARTUP_QUIET_MS, o.startupMaxWaitMs ?? STARTUP_MAX_WAIT_MS, this.stopping.signal, () => !this.index?.catchingUp() && !this.historyIndex?.catchingUp())
    if (this.closed || this.stopping.signal.aborted || hasCommitGraph(this.repo)) return
    this.repacking ??= this.writeGraph().finally(() => {
      this.repacking = undefined
    })
  }

  /** Whether the repository being opened is large enough for start-up maintenance to wait for a pause in requests. */
  private opensLarge(): boolean {
    return this.stats().documents >= LARGE_REPOSITORY_DOCS
  }

  private async writeGraph(maxNewFilters?: number): Promise<void> {
    const error = await writeCommitGraph(this.repo, this.stopping.signal, maxNewFilters)
    if (error) this.log.warn('history reads stay slower', {error: error.message})
  }

  private async start(): Promise<void> {
    mkdirSync(this.dataDir, {recursive: true})
    this.lock = acquireInstanceLock(this.dataDir)
    try {
      await prepareRepository(this.dataDir, this.repo, this.lock.previousCrashed, this.log)
      this.reader = new BlobReader(this.repo)
      const loaded = await loadBranches(this.repo, this.reader, this.log, (branch, id, at) => this.expiries.push({at, branch, id}))
      this.branchesState = loaded.branches
      const {headSeq} = loaded
      this.seq = Math.max(this.seq, loaded.seq)
      this.writer = this.newWriter()
      const {entries, wal} = await WriteAheadLog.open(this.layout.wal)
      this.wal = wal
      for (const e of entries) this.seq = Math.max(this.seq, e.seq)
      this.checkpointedSeq = this.seq
      this.requestedSeq = this.seq
      const replay = entries.filter((e) => e.seq > (headSeq.get(e.branch) ?? 0))
      if (this.options.fullText !== false) {
        this.index = new FullTextIndex({
          batchSize: this.options.indexBatchSize ?? 1000,
          checkIntervalMs: this.options.indexCheckIntervalMs ?? 3_600_000,
          dir: this.layout.index,
          logger: this.log.child('svc.index.fulltext'),
          readBody: (branch, id) => {
            const e = this.branchesState.get(branch)?.docs.get(id)
            return e ? this.blob(e, branch, id).then((body) => ({body, sha: e.sha})) : Promise.resolve(undefined)
          },
          currentCount: (branch) => this.branchesState.get(branch)?.docs.size ?? 0,
          currentIds: (branch) => this.branchesState.get(branch)?.docs.keys() ?? [],
          currentSha: (branch, id) => this.branchesState.get(branch)?.docs.get(id)?.sha,
          repo: this.repo,
        })
        await this.index.open([...this.branchesState.keys()], loaded.heads)
      }
      if (this.options.historyIndex !== false) {
        // Only a large repository's catch-up waits (a 100k-commit build takes seconds of both
        // cores); a small or new one's history is indexed as its writes land, as they arrive.
        const startup = this.opensLarge() ? {maxWaitMs: this.options.startupMaxWaitMs ?? STARTUP_MAX_WAIT_MS, quietMs: this.options.startupQuietMs ?? STARTUP_QUIET_MS, ready: () => !this.index?.catchingUp()} : undefined
        this.historyIndex = new HistoryIndex({dir: this.layout.index, logger: this.log.child('svc.index.history'), repo: this.repo, startup})
        this.historyIndex.open(this.branchesState.keys())
      }
      this.secondary.load(this.branchesState)
      if (replay.length > 0) {
        this.checkpointedSeq = Math.min(...replay.map((e) => e.seq)) - 1
        this.requestedSeq = this.checkpointedSeq
        for (const e of replay) this.apply(e, true)
        this.log.info('replaying acknowledged writes not yet in git', {entries: replay.length})
        this.checkpoints.schedule()
      } else {
        this.sentSeq = this.seq
        await this.wal.release(this.seq)
      }
      this.sentSeq = Math.max(this.sentSeq, this.seq)
      // Documents that expired while the server was down are removed now (reads already hide them).
      this.scheduleSweep()
      // A large repository without a commit-graph (from an older svc, a restore, a plain clone)
      // gets one in the background; small ones get it with their first background repack.
      if (this.opensLarge() && !hasCommitGraph(this.repo)) void this.startupGraph()
      this.log.info('engine open', {branches: this.branchesState.size, dataDir: this.dataDir, documents: this.stats().documents})
      // From now on (steady state) git commands start in the helper process (git-spawner.ts). Not
      // during the open: the process is still small then, and a one-shot CLI command that opens,
      // reads and closes does not wait for a helper to start.
      this.releaseSpawner = useGitSpawner()
    } catch (error) {
      await this.reader?.close().catch(() => {})
      await this.writer?.close().catch(() => {})
      this.lock.release()
      this.releaseSpawner?.()
      throw error
    }
  }

  private async syncGit(): Promise<void> {
    await this.flushInternal()
  }

  private async write(branch: string, ops: WalOp[], options: WriteOptions, bodies?: Array<Buffer | undefined>): Promise<number> {
    this.checkOpen()
    this.checkWritable()
    if (this.writer.error) this.writerFailed(this.writer.error)
    if (this.failure) throw this.failure
    if (this.recovering) {
      // A restart normally takes well under a second; a writer that keeps dying fails writes fast.
      await Promise.race([this.recovering, new Promise((r) => setTimeout(r, 5000).unref())])
      this.checkOpen()
      if (this.writerDown) throw new EngineError('unavailable', `${this.writerDown}; svc is restarting it, retry shortly (acknowledged writes are safe)`)
    }
    // Writes being logged count against the bound too, or a burst would all pass the check at once.
    while (this.pendingQueue.length + this.appending >= this.maxPending) {
      await new Promise<void>((resolve) => this.pressureWaiters.push(resolve))
      this.checkOpen()
      if (this.failure) throw this.failure
    }
    const large = ops.some((o) => o.body !== undefined && o.body.length >= LARGE_WRITE_BYTES)
    return this.inWriteOrder(large, async () => {
      const entry: WalEntry = {branch, meta: cleanMeta(options.meta), ops, seq: ++this.seq, time: this.now()}
      this.appending++
      let counted = true
      try {
        await this.wal.append(entry, () => {
          this.appending--
          counted = false
          this.apply(entry, false, bodies)
        })
      } finally {
        if (counted) this.appending--
      }
      return entry.seq
    })
  }

  /**
   * Starts `append` (which logs synchronously up to its first await) after every write that
   * waits for a turn of the event loop; a large write waits for one first (loop-turns.ts). So
   * writes still reach the log in the order they were made, and a small write made while no
   * large one waits starts at once.
   */
  private async inWriteOrder(large: boolean, append: () => Promise<number>): Promise<number> {
    if (!large && this.writeTurns === undefined) return append()
    const before = this.writeTurns
    let started!: () => void
    const gate = new Promise<void>((resolve) => (started = resolve))
    this.writeTurns = gate
    await before
    if (large) await pace()
    try {
      return append()
    } finally {
      if (this.writeTurns === gate) this.writeTurns = undefined
      started()
    }
  }
}

/** A commit's spec from its log entry and the files `apply` (or `logged`) made of its ops. */
function commitSpec(entry: WalEntry, files: CommitFile[]): CommitSpec {
  return {authorName: entry.meta?.user ?? entry.meta?.origin ?? 'svc', branch: entry.branch, files, message: commitMessage(entry), time: entry.time}
}

function cleanMeta(meta: WriteOptions['meta']): WalEntry['meta'] {
  if (!meta) return undefined
  const out: NonNullable<WalEntry['meta']> = {}
  if (meta.origin) out.origin = String(meta.origin)
  if (meta.user) out.user = String(meta.user)
  if (meta.requestId) out.requestId = String(meta.requestId)
  return Object.keys(out).length > 0 ? out : undefined
}


function checkExpiry(at: unknown): null | number {
  if (at === null) return null
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) {
    throw new EngineError('invalid_argument', `an expiry is epoch milliseconds (a non-negative integer) or null, got ${JSON.stringify(at)}`)
  }
  return at
}


export function removeIndexDir(dir: string): void {
  rmSync(dir, {force: true, recursive: true})
}

/** Why bytes read from Git are not a stored document (not JSON, or not an object), or undefined when they are one. */
/** An as-of time: epoch milliseconds, or RFC 3339. */
function parseTime(time: number | string): number {
  const t = typeof time === 'number' ? time : /^\d+$/.test(time) ? Number(time) : Date.parse(time)
  if (!Number.isFinite(t)) throw new EngineError('invalid_argument', `invalid time ${JSON.stringify(time)}: use RFC 3339 or epoch milliseconds`)
  return t
}

function jsonProblem(body: Buffer): string | undefined {
  try {
    const v: unknown = JSON.parse(body.toString('utf8'))
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? undefined : 'not a JSON object'
  } catch (error) {
    return (error as Error).message.slice(0, 200)
  }
}
