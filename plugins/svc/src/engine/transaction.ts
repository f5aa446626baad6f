/**
 * A transaction over the engine API: writes are buffered in memory, reads through the transaction
 * see them (get, getMany, and list with its prefix/table/cursor paging), and `commit` hands them
 * to `batch` as one operation list, so the whole transaction is exactly one Git commit. Nothing
 * is written before `commit`; if `batch` refuses any write, it writes nothing.
 *
 * Used by PostgreSQL BEGIN/COMMIT (and each simple Query string as an implicit transaction),
 * Redis MULTI/EXEC, REST batches and the bindings. Isolation is read committed: reads of ids the
 * transaction has not written see the engine's current version.
 */
import type {BatchOp, Doc, Engine, GetManyOptions, ListOptions, ListResult, Transaction, WriteOptions, WriteResult} from './types.js'

import {EngineError} from './errors.js'
import {canonicalId, parseId} from './ids.js'

type Pending = {doc: Doc; keepExpiry: boolean; op: 'put'} | {op: 'delete'}

export class EngineTransaction implements Transaction {
  readonly branch: string
  private state: 'committed' | 'committing' | 'open' | 'rolled back' = 'open'
  /** Latest write per canonical id, in first-write order. */
  private readonly writes = new Map<string, Pending>()
  private readonly expiries = new Map<string, null | number>()
  /** Canonical ids written, sorted; rebuilt lazily for list merges. */
  private sorted?: string[]

  constructor(
    private readonly engine: Engine,
    private readonly options: WriteOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.branch = options.branch ?? 'main'
  }

  /** Ids this transaction has written (put or deleted), so callers can merge them into lookups by index. */
  writtenIds(prefix = ''): string[] {
    return this.sortedIds().filter((id) => id.startsWith(prefix))
  }

  get size(): number {
    return this.writes.size + this.expiries.size
  }

  async get(id: string): Promise<Doc | undefined> {
    this.checkOpen()
    const key = canonicalId(id)
    const at = this.expiries.get(key)
    if (typeof at === 'number' && at <= this.now()) return undefined
    const w = this.writes.get(key)
    if (w) return w.op === 'put' ? w.doc : undefined
    return this.engine.get(id, {branch: this.branch})
  }

  async getMany(ids: string[], options: Pick<GetManyOptions, 'skipped'> = {}): Promise<Array<Doc | undefined>> {
    this.checkOpen()
    const out: Array<Doc | undefined> = Array.from({length: ids.length})
    const need: number[] = []
    for (const [i, id] of ids.entries()) {
      const key = this.writes.size === 0 && this.expiries.size === 0 ? undefined : canonicalId(id)
      const at = key === undefined ? undefined : this.expiries.get(key)
      const w = key === undefined ? undefined : this.writes.get(key)
      if (typeof at === 'number' && at <= this.now()) out[i] = undefined
      else if (w) out[i] = w.op === 'put' ? w.doc : undefined
      else need.push(i)
    }
    if (need.length > 0) {
      const got = await this.engine.getMany(
        need.map((i) => ids[i]),
        {branch: this.branch, skipped: options.skipped},
      )
      for (const [j, i] of need.entries()) out[i] = got[j]
    }
    return out
  }

  async list(options: Omit<ListOptions, 'branch'> = {}): Promise<ListResult> {
    this.checkOpen()
    const page = await this.engine.list({...options, branch: this.branch})
    if (this.writes.size === 0) return page
    // The engine's page covers ids in (cursor, last]; without nextCursor it runs to the end.
    let prefix = options.prefix ?? ''
    const table = options.table ?? (prefix.includes(':') ? prefix.slice(0, prefix.indexOf(':')) : undefined)
    if (table !== undefined && !prefix.startsWith(`${table}:`)) prefix = `${table}:${prefix}`
    const lo = options.cursor
    const hi = page.nextCursor
    const inRange = (id: string): boolean => id.startsWith(prefix) && (lo === undefined || id > lo) && (hi === undefined || id <= hi)
    const byId = new Map(page.docs.map((d) => [d.id, d]))
    for (const id of this.sortedIds()) {
      if (!inRange(id)) continue
      const w = this.writes.get(id) as Pending
      if (w.op === 'put') byId.set(id, w.doc)
      else byId.delete(id)
    }
    const docs = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    return hi === undefined ? {docs} : {docs, nextCursor: hi}
  }

  put(doc: Doc, options: {keepExpiry?: boolean} = {}): void {
    this.checkOpen()
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new EngineError('invalid_document', 'a document must be a JSON object')
    const id = parseId(doc.id).id
    this.record(id, {doc: id === doc.id ? doc : {...doc, id}, keepExpiry: Boolean(options.keepExpiry), op: 'put'})
    if (!options.keepExpiry) this.expiries.delete(id)
  }

  delete(id: string): void {
    this.checkOpen()
    const cid = parseId(id).id
    this.record(cid, {op: 'delete'})
    this.expiries.delete(cid)
  }

  expire(id: string, at: null | number): void {
    this.checkOpen()
    if (at !== null && !Number.isFinite(at)) throw new EngineError('invalid_argument', `expiry must be epoch milliseconds or null, got ${String(at)}`)
    this.expiries.set(parseId(id).id, at)
  }

  async commit(): Promise<WriteResult[]> {
    this.checkOpen()
    this.state = 'committing'
    try {
      // Puts, deletes and expiries go to the engine as one batch: exactly one Git commit, or nothing.
      const ops: BatchOp[] = []
      for (const [id, w] of this.writes) {
        if (w.op === 'put') ops.push(w.keepExpiry ? {doc: w.doc, keepExpiry: true, op: 'put'} : {doc: w.doc, op: 'put'})
        else ops.push({id, op: 'delete'})
      }
      for (const [id, at] of this.expiries) ops.push({at, id, op: 'expire'})
      const results = ops.length > 0 ? await this.engine.batch(ops, {...this.options, branch: this.branch}) : []
      this.state = 'committed'
      return results
    } catch (error) {
      // A refused batch wrote nothing; the transaction is over either way.
      this.state = 'rolled back'
      throw error
    }
  }

  rollback(): void {
    if (this.state === 'committed' || this.state === 'committing') return
    this.state = 'rolled back'
    this.writes.clear()
    this.expiries.clear()
    this.sorted = undefined
  }

  private record(id: string, w: Pending): void {
    if (!this.writes.has(id)) this.sorted = undefined
    this.writes.set(id, w)
  }

  private sortedIds(): string[] {
    this.sorted ??= [...this.writes.keys()].sort()
    return this.sorted
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw new EngineError('invalid_argument', `the transaction is ${this.state === 'committing' ? 'committing' : this.state}`)
  }
}

/** `engine.begin()` for any engine: a transaction on `options.branch` (default `main`). */
export function beginTransaction(engine: Engine, options: WriteOptions = {}, now: () => number = Date.now): EngineTransaction {
  return new EngineTransaction(engine, options, now)
}
