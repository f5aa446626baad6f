/**
 * The one API of the svc engine. REST, Redis-protocol, PostgreSQL-protocol servers and the ops
 * commands are adapters over this interface; none of them touches Git or the index directly.
 * (Drafted at the foundation so the engine and the protocol servers can be built side by side;
 * the engine's implementer may extend it, keeping existing members source-compatible.)
 */
import type {IndexProgress, IndexStatus} from './fulltext.js'
import type {DataDirLayout} from './layout.js'

export type Json = boolean | Json[] | null | number | string | {[key: string]: Json}

/** A stored document: a JSON object whose `id` is `table:key` (a bare key goes to the default table). */
export interface Doc {
  [field: string]: Json
  id: string
}

/** Who made a write; recorded with its commit. */
export interface WriteMeta {
  /** `rest`, `redis`, `pg`, `api`, `cli`, ... */
  origin?: string
  requestId?: string
  user?: string
}

export interface BranchOption {
  /** Defaults to `main`. */
  branch?: string
}

export interface WriteOptions extends BranchOption {
  meta?: WriteMeta
  /** put keeps the document's current expiry instead of clearing it (Redis KEEPTTL, HSET...). */
  keepExpiry?: boolean
  /** Internal writes (catalog, index definitions) may use reserved tables; user writes may not. */
  system?: boolean
}

export interface WriteResult {
  branch: string
  id: string
  /** Write-ahead-log sequence number; the write is durable and readable once this resolves. */
  seq: number
}

export type BatchOp =
  | {at: null | number; id: string; op: 'expire'}
  | {doc: Doc; keepExpiry?: boolean; op: 'put'}
  | {id: string; op: 'delete'}

export interface ListOptions extends BranchOption {
  /** List the branch as it stood at this commit, or at this time (its last commit then). */
  asOf?: Omit<AsOfOptions, 'branch'>
  cursor?: string
  limit?: number
  /** Id order of the page: `asc` (the default) or `desc`; a cursor continues in the same order. */
  order?: 'asc' | 'desc'
  /** Id prefix, e.g. `users:` or `users:a`. */
  prefix?: string
  table?: string
}

export interface ListResult {
  docs: Doc[]
  nextCursor?: string
  /** Documents of the page left out because their stored object is missing (damage; see /health). */
  skipped?: Array<{id: string; object: string}>
}

export interface SearchOptions extends BranchOption {
  limit?: number
  offset?: number
  table?: string
}

export interface SearchHit {
  doc: Doc
  id: string
  score: number
}

export interface SearchResult {
  hits: SearchHit[]
  /** Hits left out because their stored object is missing from the repository (damage; see /health). */
  skipped?: Array<{id: string; object: string}>
  /**
   * Present only while the branch's full-text index is behind (being built or catching up at
   * start): `hits` and `total` cover the documents indexed so far.
   */
  index?: IndexStatus
  total: number
  /**
   * Set when `total` is an estimate: the query matches more than 10,000 documents, so the first
   * 10,000 matches in index order are ranked and the total is extrapolated from them.
   */
  totalEstimated?: true
}

export interface Version {
  /** Commit id (40 hex). */
  commit: string
  /** null when this version is a delete. */
  doc: Doc | null
  meta?: WriteMeta
  op: 'delete' | 'put'
  /** RFC 3339 UTC. */
  time: string
}

export interface HistoryOptions extends BranchOption {
  cursor?: string
  limit?: number
}

export interface HistoryResult {
  nextCursor?: string
  versions: Version[]
}

export interface AsOfOptions extends BranchOption {
  commit?: string
  /** RFC 3339 or epoch milliseconds. */
  time?: number | string
}

export interface DiffEntry {
  after?: Json
  before?: Json
  op: 'add' | 'change' | 'remove'
  path: string
}

export interface Branch {
  head: string | null
  name: string
}

export interface EngineStats {
  documents: number
  indexDocuments: number
  pendingEntries: number
}

/** A secondary equality index on one top-level field of a table (per branch). */
export interface IndexInfo {
  branch: string
  /** Documents whose field holds an indexed (non-null) value. */
  documents: number
  /** Set when the index could not be built; queries then fall back to reading the table. */
  error?: string
  field: string
  name: string
  table: string
}

export interface IndexOptions extends BranchOption {
  /** Return the existing index instead of failing when the name is taken. */
  ifNotExists?: boolean
  /** Defaults to `<table>_<field>_idx`. */
  name?: string
}

/** Engine details for health, metrics and diagnose. */
export interface EngineDetails extends EngineStats {
  branches: Array<{documents: number; index: IndexStatus; name: string}>
  checkpointedSeq: number
  maxPendingEntries: number
  seq: number
  walBytes: number
  walFsyncs: number
  /** Set while the Git writer is down: writes are refused until svc has restarted it. */
  writerError?: string
  /** Times the Git writer died and svc restarted it, replaying the writes not yet in Git. */
  writerRestarts: number
}

/** A document whose Git object is missing or unreadable. */
export interface Damage {
  branch: string
  id: string
  object: string
  /** What is wrong with the object: `missing from the repository`, `corrupt (...)`, `not valid JSON (...)`. */
  reason?: string
}

/**
 * Options of a multi-document read. A damaged document reads as undefined instead of failing the
 * whole read; it is appended to `skipped` when given (and always logged and shown in /health).
 */
export interface GetManyOptions extends BranchOption {
  skipped?: Damage[]
}

export interface Engine {
  /** The data directory (absolute path). */
  readonly dataDir: string
  /** Where each file of the data directory is (engine/layout.ts). */
  readonly layout: DataDirLayout
  /** The bare Git repository inside the data directory; ops read it with plain git. */
  readonly repo: string
  /** Makes an existing commit (brought in by a snapshot import) a new branch. */
  adoptBranch(name: string, commit: string): Promise<Branch>
  /** Several adopted at once, all or none (a live snapshot import). */
  adoptBranches(list: Array<{commit: string; name: string}>): Promise<Branch[]>
  /** Whether writes are accepted now, and why not (health checks). */
  canWrite(): {ok: boolean; reason?: string}
  /** Packs the repository's objects (offline maintenance and `svc compact`). */
  compact(): Promise<void>
  /** Documents whose Git object is missing. */
  damage(): Damage[]
  /** Counters and state for health, metrics and diagnose. */
  details(): EngineDetails
  /** Background full-text indexing counters, or undefined when full-text search is off. */
  indexProgress(): IndexProgress | undefined
  /** The engine's clock (epoch ms): expiries are judged by it, so adapters turning a TTL into a time use it too. */
  now(): number
  /** Runs the full-text consistency check now and waits until the index has caught up. */
  reindex(): Promise<void>
  /** A read-only follower (ops/follower.ts): writes are refused with `reason` (code `read_only`); undefined ends it. */
  setReadOnly(reason: string | undefined): void
  /** Follower: points branch `name` at `commit` fetched from the leader (null removes it) and serves that state. */
  followRef(name: string, commit: null | string): Promise<void>
  /**
   * Follower: makes the secondary index definitions of each branch those of the leader
   * (`branch -> definitions`), building new indexes and dropping others; read-only or not.
   */
  followIndexes(definitions: Record<string, Array<{field: string; name: string; table: string}>>): Promise<void>
  /** Removes the documents whose expiry has passed now, without waiting for the sweep timer. */
  sweepExpired(): Promise<void>
  asOf(id: string, options: AsOfOptions): Promise<Doc | undefined>
  /** Several writes as one commit (used for SQL transactions). */
  batch(ops: BatchOp[], options?: WriteOptions): Promise<WriteResult[]>
  branches(): Promise<Branch[]>
  close(): Promise<void>
  count(options?: BranchOption & {table?: string}): Promise<number>
  createBranch(name: string, options?: {from?: string}): Promise<Branch>
  /** Deleting a missing document writes nothing: it resolves with `existed: false` and `seq: 0`. */
  delete(id: string, options?: WriteOptions): Promise<WriteResult & {existed: boolean}>
  diff(id: string, options: BranchOption & {from: string; to?: string}): Promise<DiffEntry[]>
  /** Waits until every acknowledged write is in Git. */
  flush(): Promise<void>
  /** Current version; cost independent of the number of documents and commits. */
  get(id: string, options?: BranchOption): Promise<Doc | undefined>
  /** Current versions in the order asked; a damaged document is undefined and named in `options.skipped`. */
  getMany(ids: string[], options?: GetManyOptions): Promise<Array<Doc | undefined>>
  /** The stored JSON bytes of the current version, for adapters that pass documents through unparsed. */
  getRaw(id: string, options?: BranchOption): Promise<Buffer | undefined>
  /** True when the id these bytes spell is surely absent from the branch (no string made); false means "maybe". */
  absentIdBytes(b: Uint8Array, start: number, end: number, options?: BranchOption): boolean
  /** `getRaw`'s answer when it needs no read from Git; `false` when it does. */
  getRawIfCached(id: string, options?: BranchOption): Buffer | false | undefined
  /** `getRawIfCached` parsed: a frozen document shared by readers (copy before changing it). */
  getParsedIfCached(id: string, options?: BranchOption): Doc | false | undefined
  history(id: string, options?: HistoryOptions): Promise<HistoryResult>
  list(options?: ListOptions): Promise<ListResult>
  /** Ids of a listing page in order, without reading the documents (adapters that pass bytes through). */
  listIds(options?: ListOptions): {ids: string[]; nextCursor?: string}
  put(doc: Doc, options?: WriteOptions): Promise<WriteResult>
  removeBranch(name: string): Promise<void>
  search(query: string, options?: SearchOptions): Promise<SearchResult>
  stats(): EngineStats
  tables(options?: BranchOption): Promise<string[]>
  /** Creates a secondary equality index on `field` of `table` and builds it from the current documents. */
  createIndex(table: string, field: string, options?: IndexOptions): Promise<IndexInfo>
  /** Resolves false when the index is missing and `ifExists` is set. */
  dropIndex(name: string, options?: BranchOption & {ifExists?: boolean}): Promise<boolean>
  /** Ids of `table` whose `field` equals `value` (PostgreSQL's `=`), or undefined without an index on it. */
  findIds(table: string, field: string, value: Json, options?: BranchOption): Promise<string[] | undefined>
  /** `findIds` without waiting: undefined also while the index is still being built (the caller then takes the long way). */
  findIdsIfReady(table: string, field: string, value: Json, options?: BranchOption): string[] | undefined
  indexes(options?: BranchOption & {table?: string}): Promise<IndexInfo[]>
  /** Sets (epoch ms) or clears (null) a document's expiry; resolves false when it does not exist. */
  expire(id: string, at: null | number, options?: WriteOptions): Promise<boolean>
  /** Epoch ms of the expiry, null when the document has none, undefined when it does not exist. */
  expiresAt(id: string, options?: BranchOption): Promise<null | number | undefined>
  /** A transaction: reads see its own writes; commit applies them all as exactly one Git commit. */
  begin(options?: WriteOptions): Transaction
}

export interface Transaction {
  readonly branch: string
  get(id: string): Promise<Doc | undefined>
  getMany(ids: string[], options?: Pick<GetManyOptions, 'skipped'>): Promise<Array<Doc | undefined>>
  /** The engine's list merged with this transaction's writes. */
  list(options?: Omit<ListOptions, 'branch'>): Promise<ListResult>
  put(doc: Doc, options?: {keepExpiry?: boolean}): void
  delete(id: string): void
  expire(id: string, at: null | number): void
  /** One commit (none when nothing was written); if any write is refused nothing is committed. */
  commit(): Promise<WriteResult[]>
  rollback(): void
}

/** Structured logger; `namespace` values such as `svc.index.fulltext` mark the source. */
export interface Logger {
  child(namespace: string): Logger
  debug(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
}

/** What the server process hands to each protocol adapter. */
export interface ServerContext {
  engine: Engine
  logger: Logger
  /** Feeds `svc_active_connections{protocol=...}`. */
  metrics: {
    connectionClosed(protocol: 'pg' | 'redis' | 'rest'): void
    connectionOpened(protocol: 'pg' | 'redis' | 'rest'): void
  }
}

/** A started protocol server. `close()` stops accepting and finishes in-flight requests. */
export interface RunningServer {
  close(): Promise<void>
  port: number
}
