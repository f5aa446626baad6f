/**
 * How Redis keys and values map to svc documents (documented in docs/svc-redis.md).
 *
 * - The key is the document id (`table:key`; a key without `:` goes to the default table).
 * - string: `{id, value: "<text>"}`; bytes that are not UTF-8 are stored base64 with
 *   `_encoding: "base64"`, so binary values round-trip.
 * - hash: the document's own fields (`HSET users:1 name Ann` gives `{id: "users:1", name: "Ann"}`),
 *   so a hash is a row for SQL and a document for REST. Any document that is not one of the other
 *   shapes reads as a hash; non-string field values read as their JSON text.
 * - list / set / zset: `{id, _redis: "list"|"set"|"zset", value: [...] | {member: score}}`.
 * - A TTL is the engine's expiry of the document (Engine.expire). Data written before svc kept
 *   expiry in the engine has it in a field `_expiresAt` (epoch ms): such a document reads as
 *   absent once that time has passed, and the field is dropped at its next write.
 */
import {isUtf8} from 'node:buffer'

import type {Doc, Json} from '../../engine/types.js'

export type RedisType = 'hash' | 'list' | 'none' | 'set' | 'string' | 'zset'

export const TYPE_FIELD = '_redis'
export const EXPIRES_FIELD = '_expiresAt'
export const ENCODING_FIELD = '_encoding'
const RESERVED = new Set(['id', TYPE_FIELD, EXPIRES_FIELD, ENCODING_FIELD])

export function typeOf(doc: Doc | undefined): RedisType {
  if (!doc) return 'none'
  const t = doc[TYPE_FIELD]
  if (t === 'list' || t === 'set' || t === 'zset') return t
  if (typeof doc.value === 'string' && isStringShape(doc)) return 'string'
  return 'hash'
}

function isStringShape(doc: Doc): boolean {
  for (const k of Object.keys(doc)) if (k !== 'value' && !RESERVED.has(k)) return false
  return true
}

export function expired(doc: Doc | undefined, now: number): boolean {
  const e = doc?.[EXPIRES_FIELD]
  return typeof e === 'number' && e <= now
}

export function stringDoc(id: string, value: Buffer): Doc {
  return isUtf8(value) ? {id, value: value.toString('utf8')} : {[ENCODING_FIELD]: 'base64', id, value: value.toString('base64')}
}

/** The bytes GET returns: the string value, or the JSON text of any other document. */
export function stringValue(doc: Doc): Buffer | string {
  if (typeOf(doc) === 'string') {
    return doc[ENCODING_FIELD] === 'base64' ? Buffer.from(doc.value as string, 'base64') : (doc.value as string)
  }
  return JSON.stringify(publicFields(doc))
}

/** The document without the Redis bookkeeping fields. */
export function publicFields(doc: Doc): Record<string, Json> {
  const out: Record<string, Json> = {}
  for (const [k, v] of Object.entries(doc)) if (k !== TYPE_FIELD && k !== EXPIRES_FIELD && k !== ENCODING_FIELD) out[k] = v
  return out
}

export function fieldText(v: Json): string {
  return typeof v === 'string' ? v : JSON.stringify(v)
}

/** Hash fields (everything except the id and bookkeeping). */
export function hashFields(doc: Doc): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (const [k, v] of Object.entries(doc)) if (!RESERVED.has(k)) out.push([k, fieldText(v)])
  return out
}

export function isHashField(name: string): boolean {
  return !RESERVED.has(name)
}

export function listItems(doc: Doc | undefined): string[] {
  return doc && Array.isArray(doc.value) ? (doc.value as Json[]).map((v) => fieldText(v)) : []
}

export function collectionDoc(id: string, type: 'list' | 'set', items: string[]): Doc {
  return {[TYPE_FIELD]: type, id, value: items}
}

export function zsetScores(doc: Doc | undefined): Map<string, number> {
  const out = new Map<string, number>()
  const v = doc?.value
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [m, s] of Object.entries(v)) if (typeof s === 'number') out.set(m, s)
    // JSON has no infinities; they are stored as strings.
    for (const [m, s] of Object.entries(v)) if (s === 'inf' || s === '-inf') out.set(m, s === 'inf' ? Infinity : -Infinity)
  }
  return out
}

export function zsetDoc(id: string, scores: Map<string, number>): Doc {
  const value: Record<string, Json> = {}
  for (const [m, s] of scores) value[m] = Number.isFinite(s) ? s : s > 0 ? 'inf' : '-inf'
  return {[TYPE_FIELD]: 'zset', id, value}
}

/** Members ordered by score, then lexicographically, as Redis orders a sorted set. */
export function zsetOrdered(scores: Map<string, number>): Array<[string, number]> {
  return [...scores].sort((a, b) => (a[1] === b[1] ? (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0) : a[1] - b[1]))
}

/** Redis glob (KEYS, SCAN MATCH) to a RegExp, plus the literal prefix for a ranged listing. */
export function globToRegExp(pattern: string): {prefix: string; re: RegExp} {
  let re = '^'
  let prefix = ''
  let literal = true
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '*') {
      re += '.*'
      literal = false
    } else if (c === '?') {
      re += '.'
      literal = false
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 1)
      if (end < 0) {
        re += '\\['
        if (literal) prefix += c
        continue
      }
      let cls = pattern.slice(i + 1, end)
      if (cls.startsWith('^')) cls = '^' + cls.slice(1).replaceAll('\\', '\\\\')
      else cls = cls.replaceAll('\\', '\\\\')
      re += `[${cls}]`
      i = end
      literal = false
    } else if (c === '\\' && i + 1 < pattern.length) {
      i++
      re += escapeRe(pattern[i])
      if (literal) prefix += pattern[i]
    } else {
      re += escapeRe(c)
      if (literal) prefix += c
    }
  }
  return {prefix, re: new RegExp(re + '$', 's')}
}

function escapeRe(c: string): string {
  return c.replaceAll(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
