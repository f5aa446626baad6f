import {EngineError} from './errors.js'
import {parseId} from './ids.js'
import type {BatchOp, Doc, Engine, ListOptions, ListResult, Transaction, WriteOptions, WriteResult} from './types.js'

/** What the transaction wrote to one id: the document (null once deleted) and its expiry. */
interface Pending {
  doc: Doc | null | undefined
  /** undefined: unchanged by this transaction; null: cleared. */
  expiresAt?: null | number
}

/**
 * A transaction over one branch: writes are held in order, reads see them (read-your-writes),
 * and `commit` hands them to the engine as one batch, so they become exactly one Git commit or,
 * when any write is refused, nothing at all.
 */
export class EngineTransaction implements Transaction {
  private done = false
  private ops: BatchOp[] = []
  private overlay = new Map<string, Pending>()

  constructor(
    private readonly engine: Engine,
    readonly branch: string,
    private readonly options: WriteOptions,
    private readonly now: () => number = Date.now,
  ) {}

  async commit(): Promise<WriteResult[]> {
    this.check()
    this.done = true
    if (this.ops.length === 0) return []
    return this.engine.batch(this.ops, {...this.options, branch: this.branch})
  }

  delete(id: string): void {
    this.check()
    const key = parseId(id).id
    this.ops.push({id: key, op: 'delete'})
    this.overlay.set(key, {doc: null, expiresAt: null})
  }

  expire(id: string, at: null | number): void {
    this.check()
    const key = parseId(id).id
    this.ops.push({at, id: key, op: 'expire'})
    const p = this.overlay.get(key)
    this.overlay.set(key, {doc: p?.doc, expiresAt: at})
  }

  async get(id: string): Promise<Doc | undefined> {
    this.check()
    const key = parseId(id).id
    const p = this.overlay.get(key)
    const doc = p?.doc === undefined ? await this.engine.get(key, {branch: this.branch}) : (p.doc ?? undefined)
    if (doc && typeof p?.expiresAt === 'number' && p.expiresAt <= this.now()) return undefined
    return doc
  }

  getMany(ids: string[]): Promise<Array<Doc | undefined>> {
    return Promise.all(ids.map((id) => this.get(id)))
  }

  async list(options: Omit<ListOptions, 'branch'> = {}): Promise<ListResult> {
    this.check()
    const page = await this.engine.list({...options, branch: this.branch})
    if (this.overlay.size === 0) return page
    let prefix = options.prefix ?? ''
    if (options.table !== undefined && !prefix.startsWith(`${options.table}:`)) prefix = `${options.table}:${prefix}`
    const inRange = (id: string): boolean =>
      id.startsWith(prefix) && (options.table === undefined || id.startsWith(`${options.table}:`)) && (options.cursor === undefined || id > options.cursor) && (page.nextCursor === undefined || id <= page.nextCursor)
    const byId = new Map(page.docs.map((d) => [d.id, d]))
    for (const id of this.overlay.keys()) {
      if (!inRange(id)) continue
      const doc = await this.get(id)
      if (doc) byId.set(id, doc)
      else byId.delete(id)
    }
    const docs = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    return {...page, docs}
  }

  put(doc: Doc, options: {keepExpiry?: boolean} = {}): void {
    this.check()
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new EngineError('invalid_document', 'a document must be a JSON object')
    const key = parseId(doc.id).id
    const stored = {...doc, id: key}
    this.ops.push({doc: stored, op: 'put', ...(options.keepExpiry ? {keepExpiry: true} : {})})
    const p = this.overlay.get(key)
    this.overlay.set(key, {doc: stored, expiresAt: options.keepExpiry ? p?.expiresAt : null})
  }

  rollback(): void {
    this.done = true
    this.ops = []
    this.overlay.clear()
  }

  private check(): void {
    if (this.done) throw new EngineError('invalid_argument', 'this transaction has already been committed or rolled back')
  }
}
