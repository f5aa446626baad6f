/**
 * The machinery every Redis command module shares: sessions, per-key locks, SCAN cursors,
 * argument parsing, error replies and reading keys (an expired key reads as absent).
 */
import {type BranchOption, type Doc, type Engine} from '../../engine/types.js'

import {getManyParsed, getParsed, getParsedIfCached} from '../../engine/parsed-read.js'

import {expired, EXPIRES_FIELD, typeOf} from './keyspace.js'
import {err, type Reply, ReplyError} from './resp.js'

export interface Session {
  branch: string
  /** Commands queued by MULTI; `dirty` when one of them was refused while queueing. */
  multi?: {dirty: boolean; queue: Buffer[][]}
  id: number
  name?: string
  /** Set by QUIT: close after the reply is written. */
  quit: boolean
  /** The read options of `branch`, made once per branch rather than per GET (an object per read was GC work at -P 16). */
  reads?: {readonly branch: string}
  resp3: boolean
}

/** The part of the engine that key commands use; a MULTI transaction provides the same. */
export type KeyStore = Pick<Engine, 'batch' | 'count' | 'delete' | 'expire' | 'expiresAt' | 'getRaw' | 'getRawIfCached' | 'list' | 'put'>

export interface Shared {
  clients(): number
  /** The command table (COMMAND describes it). */
  commands: ReadonlyMap<string, CommandSpec>
  cursors: CursorTable
  /** For commands that are not about keys (branches, search, history, stats). */
  engine: Engine
  locks: KeyLocks
  /** The largest reply one command may give (reply-limit.ts). */
  maxReplyBytes: number
  /** What key commands read and write through: the engine, or inside EXEC its transaction. */
  store: KeyStore
  startedAt: number
  version: string
}

export type Handler = (s: Session, a: Buffer[], sh: Shared) => Promise<Reply> | Reply

export interface CommandSpec {
  /** Redis convention: N exact argument count incl. the name; -N at least N. */
  arity: number
  /** Index of the first/last key argument and step, as COMMAND reports them. */
  keys: [number, number, number]
  flags: string[]
  run: Handler
}

export const WRONGTYPE = err('WRONGTYPE Operation against a key holding the wrong kind of value')

export const NOT_INT = err('ERR value is not an integer or out of range')

export const NOT_FLOAT = err('ERR value is not a valid float')

export const SYNTAX = err('ERR syntax error')

/**
 * Serialises read-modify-write commands on the same key inside this process. A key is held while
 * it has an entry: the waiters, woken one at a time in arrival order. The free key (every durable
 * SET of redis-benchmark) costs a map entry and no promise of its own; a chain of promises per
 * key cost three promises and their reactions per SET.
 */
export class KeyLocks {
  private readonly held = new Map<string, Array<() => void>>()
  async with<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let waiters = this.held.get(key)
    if (waiters) {
      const queue = waiters
      // The holder that releases hands the key over: the entry stays while anyone waits.
      await new Promise<void>((resolve) => queue.push(resolve))
    } else this.held.set(key, (waiters = []))
    try {
      return await fn()
    } finally {
      const next = waiters.shift()
      if (next) next()
      else this.held.delete(key)
    }
  }

  /** Keys held or waited for (tests: none are left once commands finish). */
  get size(): number {
    return this.held.size
  }
}

/**
 * Stores a document written by a Redis command. `ttl`: keep the key's expiry (what Redis does for
 * APPEND, INCR, HSET, LPUSH, ...), clear it (SET, GETSET), or expire at an epoch-ms time (SET EX).
 * Expiry is the engine's, so an expired key is gone for REST and SQL too, also after a restart.
 */
export async function put(sh: Shared, sess: Session, doc: Doc, ttl: 'clear' | 'keep' | number = 'keep'): Promise<void> {
  let at = ttl
  let body = doc
  // A TTL from before expiry lived in the engine is carried over into the engine's expiry.
  const legacy = doc[EXPIRES_FIELD]
  if (legacy !== undefined) {
    body = {...doc}
    delete body[EXPIRES_FIELD]
    if (ttl === 'keep' && typeof legacy === 'number') at = legacy
  }
  if (typeof at === 'number') await sh.store.batch([{doc: body, op: 'put'}, {at, id: doc.id, op: 'expire'}], wopts(sess))
  else await sh.store.put(body, {...wopts(sess), keepExpiry: at === 'keep'})
}

/** SCAN cursors are numbers for clients; they stand for an engine listing cursor held here. */
export class CursorTable {
  private next = 1
  private readonly entries = new Map<number, string>()
  put(engineCursor: string): number {
    const n = this.next++
    this.entries.set(n, engineCursor)
    // Bound memory: abandoned scans are forgotten oldest first.
    if (this.entries.size > 10_000) this.entries.delete(this.entries.keys().next().value as number)
    return n
  }
  take(n: number): string | undefined {
    const c = this.entries.get(n)
    this.entries.delete(n)
    return c
  }
}

export const s = (b: Buffer): string => b.toString('utf8')

/** Bare keys live in the engine's `default` table; Redis shows them without that prefix. */
export function displayKey(id: string): string {
  return id.startsWith('default:') ? id.slice(8) : id
}

export const up = (b: Buffer): string => b.toString('latin1').toUpperCase()

export function int(b: Buffer): number | undefined {
  const t = s(b)
  if (!/^-?\d{1,16}$/.test(t)) return undefined
  const n = Number(t)
  return Number.isSafeInteger(n) ? n : undefined
}

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** A signed 64-bit integer written the way Redis accepts one (no sign `+`, no leading zeros), else undefined. */
export function int64(b: Buffer | string): bigint | undefined {
  const t = typeof b === 'string' ? b : s(b)
  if (!/^(0|-?[1-9]\d{0,18})$/.test(t)) return undefined
  const n = BigInt(t)
  return n < INT64_MIN || n > INT64_MAX ? undefined : n
}

/** `a + b` when it stays in the signed 64-bit range, else undefined (Redis' overflow error). */
export function add64(a: bigint, b: bigint): bigint | undefined {
  const r = a + b
  return r < INT64_MIN || r > INT64_MAX ? undefined : r
}

export function float(b: Buffer): number | undefined {
  const t = s(b).toLowerCase()
  if (t === 'inf' || t === '+inf') return Infinity
  if (t === '-inf') return -Infinity
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) return undefined
  return Number(t)
}

export function engineError(e: unknown): ReplyError {
  const msg = e instanceof Error ? e.message : String(e)
  return err(`ERR ${msg}`)
}

export function wopts(sess: Session) {
  return {branch: sess.branch, meta: {origin: 'redis', user: sess.name}}
}

/**
 * `load` without waiting when the document is in memory; `false` when the caller must use `load`
 * (a read from Git, or an expired legacy key to delete).
 */
/** The session's read options (one object per session and branch, not one per command). */
export function readOptions(sess: Session): BranchOption {
  return sess.reads?.branch === sess.branch ? sess.reads : (sess.reads = {branch: sess.branch})
}

export function loadIfCached(sh: Shared, sess: Session, key: string): Doc | false | undefined {
  const doc = getParsedIfCached(sh.store, key, readOptions(sess))
  // Only a document with the legacy expiry field can have expired here (the engine hides the rest).
  return doc && doc[EXPIRES_FIELD] !== undefined && expired(doc, sh.engine.now()) ? false : doc
}

/** Reads a key; a document with an expired legacy `_expiresAt` field reads as absent (and is deleted). */
export async function load(sh: Shared, sess: Session, key: string): Promise<Doc | undefined> {
  const doc = await getParsed(sh.store, key, {branch: sess.branch})
  if (doc && expired(doc, sh.engine.now())) {
    await sh.store.delete(key, wopts(sess)).catch(() => undefined)
    return undefined
  }
  return doc
}

export async function loadMany(sh: Shared, sess: Session, keys: string[]): Promise<Array<Doc | undefined>> {
  const docs = await getManyParsed(sh.store, keys, {branch: sess.branch})
  return docs.map((d) => (d && expired(d, sh.engine.now()) ? undefined : d))
}

export async function withDoc(
  sess: Session,
  sh: Shared,
  key: string,
  want: 'hash' | 'list' | 'set' | 'zset',
  fn: (doc: Doc | undefined) => Promise<Reply>,
): Promise<Reply> {
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (doc && typeOf(doc) !== want) return WRONGTYPE
    return fn(doc)
  })
}

export async function readTyped(sess: Session, sh: Shared, key: string, want: string): Promise<Doc | ReplyError | undefined> {
  const doc = await load(sh, sess, key)
  if (doc && typeOf(doc) !== want) return WRONGTYPE
  return doc
}

export function normRange(start: number, stop: number, len: number): [number, number] {
  if (start < 0) start = Math.max(0, len + start)
  if (stop < 0) stop = len + stop
  if (stop >= len) stop = len - 1
  return [start, stop]
}

export const W = ['write']

export const R = ['readonly', 'fast']

export const K1: [number, number, number] = [1, 1, 1]

export const NK: [number, number, number] = [0, 0, 0]

export function c(arity: number, flags: string[], keys: [number, number, number], run: Handler): CommandSpec {
  return {arity, flags, keys, run}
}
