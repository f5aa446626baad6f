/**
 * The key store a MULTI block runs against: an engine transaction (`engine.begin()`), so reads
 * see the block's own writes and EXEC's commit is exactly one Git commit.
 */
import {canonicalId} from '../../engine/ids.js'
import type {BatchOp, Doc, Engine, ListOptions, ListResult, Transaction, WriteOptions, WriteResult} from '../../engine/types.js'

import type {KeyStore} from './shared.js'

export class TxStore implements KeyStore {
  private readonly tx: Transaction
  /** Expiry the block set (epoch ms) or cleared (null), by canonical id. */
  private readonly expiries = new Map<string, null | number>()
  /** Bytes handed out per document object, so the parsed-read cache sees one Buffer per version. */
  private readonly bytes = new WeakMap<Doc, Buffer>()

  constructor(
    private readonly engine: Engine,
    options: WriteOptions & {branch: string},
  ) {
    this.tx = engine.begin(options)
  }

  async batch(ops: BatchOp[], options?: WriteOptions): Promise<WriteResult[]> {
    const out: WriteResult[] = []
    for (const o of ops) {
      if (o.op === 'put') out.push(await this.put(o.doc, {...options, keepExpiry: o.keepExpiry ?? options?.keepExpiry}))
      else if (o.op === 'delete') out.push(await this.delete(o.id, options))
      else {
        await this.expire(o.id, o.at, options)
        out.push({branch: this.tx.branch, id: this.key(o.id), seq: 0})
      }
    }
    return out
  }

  async commit(): Promise<void> {
    await this.tx.commit()
  }

  /** The engine's count: DBSIZE inside MULTI does not include the block's own writes. */
  count(options?: ListOptions): Promise<number> {
    return this.engine.count({...options, branch: this.tx.branch})
  }

  async delete(id: string, options?: WriteOptions): Promise<WriteResult & {existed: boolean}> {
    const key = this.key(id, options)
    const existed = (await this.tx.get(key)) !== undefined
    if (existed) this.tx.delete(key)
    this.expiries.delete(key)
    return {branch: this.tx.branch, existed, id: key, seq: 0}
  }

  async expire(id: string, at: null | number, options?: WriteOptions): Promise<boolean> {
    const key = this.key(id, options)
    if ((await this.tx.get(key)) === undefined) return false
    this.tx.expire(key, at)
    this.expiries.set(key, at)
    return true
  }

  async expiresAt(id: string, options?: {branch?: string}): Promise<null | number | undefined> {
    const key = this.key(id, options)
    if ((await this.tx.get(key)) === undefined) return undefined
    const set = this.expiries.get(key)
    return set === undefined ? this.engine.expiresAt(key, {branch: this.tx.branch}) : set
  }

  async getRaw(id: string, options?: {branch?: string}): Promise<Buffer | undefined> {
    const doc = await this.tx.get(this.key(id, options))
    if (doc === undefined) return undefined
    let b = this.bytes.get(doc)
    if (!b) {
      b = Buffer.from(JSON.stringify(doc))
      this.bytes.set(doc, b)
    }
    return b
  }

  /** Always a read through the transaction. */
  getRawIfCached(id: string, options?: {branch?: string}): false {
    this.key(id, options)
    return false
  }

  list(options?: ListOptions): Promise<ListResult> {
    const {branch, ...rest} = options ?? {}
    this.key('', {branch})
    return this.tx.list(rest)
  }

  async put(doc: Doc, options?: WriteOptions): Promise<WriteResult> {
    const id = this.key(doc.id, options)
    this.tx.put(doc, {keepExpiry: options?.keepExpiry})
    if (!options?.keepExpiry) this.expiries.set(id, null)
    return {branch: this.tx.branch, id, seq: 0}
  }

  rollback(): void {
    this.tx.rollback()
  }

  private key(id: string, options?: {branch?: string}): string {
    if (options?.branch !== undefined && options.branch !== this.tx.branch) {
      throw new Error(`a MULTI block works on one branch (${this.tx.branch}); use BRANCH USE before MULTI`)
    }
    return id === '' ? id : canonicalId(id)
  }
}
