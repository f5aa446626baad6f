/**
 * The key store a MULTI block runs against: reads see the block's own writes, and the writes
 * reach the engine only at commit, all of them in one batch (one Git commit).
 */
import {canonicalId} from '../../engine/ids.js'
import type {BatchOp, Doc, Engine, ListOptions, ListResult, WriteOptions, WriteResult} from '../../engine/types.js'

import type {KeyStore} from './shared.js'

export class TxStore implements KeyStore {
  /** Canonical id -> the document as the block left it, or null when the block deleted it. */
  private readonly writes = new Map<string, Buffer | null>()

  constructor(
    private readonly base: Engine,
    readonly branch: string,
  ) {}

  async batch(ops: BatchOp[], options?: WriteOptions): Promise<WriteResult[]> {
    const out: WriteResult[] = []
    for (const o of ops) out.push(o.op === 'put' ? await this.put(o.doc, options) : await this.delete(o.id, options))
    return out
  }

  /** Applies the block's writes as one engine batch; nothing when the block wrote nothing. */
  async commit(options: WriteOptions): Promise<void> {
    const ops: BatchOp[] = []
    for (const [id, body] of this.writes) {
      if (body) ops.push({doc: JSON.parse(body.toString('utf8')) as Doc, op: 'put'})
      // A key the block created and deleted again never reached the engine.
      else if ((await this.base.getRaw(id, {branch: this.branch})) !== undefined) ops.push({id, op: 'delete'})
    }
    if (ops.length > 0) await this.base.batch(ops, {...options, branch: this.branch})
  }

  async count(options?: ListOptions): Promise<number> {
    let n = await this.base.count(options)
    const table = options?.table
    for (const [id, body] of this.writes) {
      if (table !== undefined && !id.startsWith(`${table}:`)) continue
      const before = (await this.base.getRaw(id, {branch: this.branch})) !== undefined
      n += (body ? 1 : 0) - (before ? 1 : 0)
    }
    return n
  }

  async delete(id: string, options?: WriteOptions): Promise<WriteResult & {existed: boolean}> {
    const key = this.key(id, options)
    const existed = (await this.getRaw(key)) !== undefined
    this.writes.set(key, null)
    return {branch: this.branch, existed, id: key, seq: 0}
  }

  async getRaw(id: string, options?: {branch?: string}): Promise<Buffer | undefined> {
    const key = this.key(id, options)
    const w = this.writes.get(key)
    if (w !== undefined) return w ?? undefined
    return this.base.getRaw(key, {branch: this.branch})
  }

  getRawIfCached(id: string, options?: {branch?: string}): Buffer | false | undefined {
    const key = this.key(id, options)
    const w = this.writes.get(key)
    if (w !== undefined) return w ?? undefined
    return this.base.getRawIfCached(key, {branch: this.branch})
  }

  /** The engine's listing with the block's writes applied (KEYS and SCAN inside MULTI). */
  async list(options?: ListOptions): Promise<ListResult> {
    const page = await this.base.list({...options, branch: this.branch})
    const docs = page.docs.filter((d) => !this.writes.has(d.id))
    const prefix = options?.prefix ?? (options?.table === undefined ? '' : `${options.table}:`)
    for (const [id, body] of this.writes) {
      if (body && id.startsWith(prefix) && (options?.cursor === undefined || id > options.cursor)) docs.push(JSON.parse(body.toString('utf8')) as Doc)
    }
    docs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    return {docs, nextCursor: page.nextCursor}
  }

  async put(doc: Doc, options?: WriteOptions): Promise<WriteResult> {
    const id = this.key(doc.id, options)
    this.writes.set(id, Buffer.from(JSON.stringify({...doc, id})))
    return {branch: this.branch, id, seq: 0}
  }

  private key(id: string, options?: {branch?: string}): string {
    if (options?.branch !== undefined && options.branch !== this.branch) {
      throw new Error(`a MULTI block works on one branch (${this.branch}); BRANCH USE before MULTI`)
    }
    return canonicalId(id)
  }
}
