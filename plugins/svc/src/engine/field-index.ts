/**
 * Secondary equality indexes on one top-level field of a table, per branch, kept in memory.
 * Values are matched as PostgreSQL compares them for `=` with svc's implicit coercions: a number
 * equals a numeric string of the same value (`1 = '1.0'`), a boolean equals PostgreSQL's boolean
 * spellings (`true = 't'`), strings compare exactly, objects and arrays by their JSON text, and
 * null never matches. A stored value lives under one key per type it can compare as, so a lookup
 * reads only the candidate sets and then checks each candidate's stored value.
 */
import type {Json} from './types.js'

export interface IndexDefinition {
  field: string
  name: string
  table: string
}

const TRUE = new Set(['t', 'true', 'yes', 'on', '1', 'y'])
const FALSE = new Set(['f', 'false', 'no', 'off', '0', 'n'])

function numeric(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined
  if (typeof v === 'boolean') return v ? 1 : 0
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v)
    return Number.isNaN(n) ? undefined : n
  }
  return undefined
}

function boolean(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v
  if (typeof v === 'string' || typeof v === 'number') {
    const s = String(v).trim().toLowerCase()
    if (TRUE.has(s)) return true
    if (FALSE.has(s)) return false
  }
  return undefined
}

function textOf(v: Json): string {
  return typeof v === 'string' ? v : JSON.stringify(v)
}

/** Keys a stored value is reachable under. */
function storedKeys(v: Json | undefined): string[] {
  if (v === null || v === undefined) return []
  const keys: string[] = []
  const n = numeric(v)
  if (n !== undefined) keys.push(`n:${n === 0 ? 0 : n}`)
  const b = boolean(v)
  if (b !== undefined) keys.push(`b:${b}`)
  if (typeof v !== 'number' && typeof v !== 'boolean') keys.push(`s:${textOf(v)}`)
  return keys
}

/** Keys a looked-up value can match under (the compare rules decide which type wins). */
function lookupKeys(q: Json): string[] {
  if (q === null) return []
  if (typeof q === 'number') return Number.isFinite(q) ? [`n:${q === 0 ? 0 : q}`] : []
  if (typeof q === 'boolean') return [`b:${q}`]
  const keys = [`s:${textOf(q)}`]
  const n = numeric(q)
  if (n !== undefined) keys.push(`n:${n === 0 ? 0 : n}`)
  const b = boolean(q)
  if (b !== undefined) keys.push(`b:${b}`)
  return keys
}

/** `stored = q` as the SQL layer evaluates it (a value that cannot be compared is not equal). */
export function sqlEquals(stored: Json | undefined, q: Json): boolean {
  if (stored === null || stored === undefined || q === null) return false
  if (typeof stored === 'number' || typeof q === 'number') {
    const x = numeric(stored)
    const y = numeric(q)
    return x !== undefined && x === y
  }
  if (typeof stored === 'boolean' || typeof q === 'boolean') {
    const x = boolean(stored)
    return x !== undefined && x === boolean(q)
  }
  return textOf(stored) === textOf(q)
}

export class FieldIndex {
  /** Resolves when the index holds every current document (it is built in the background). */
  ready: Promise<void> = Promise.resolve()
  /** Set once the build has read every document: `ready` cannot be asked without waiting. */
  built = false
  private byKey = new Map<string, Set<string>>()
  private values = new Map<string, Json>()

  constructor(readonly def: IndexDefinition) {}

  get size(): number {
    return this.values.size
  }

  /** Ids whose field equals `q`, in id order. */
  find(q: Json): string[] {
    const out = new Set<string>()
    for (const k of lookupKeys(q)) {
      for (const id of this.byKey.get(k) ?? []) if (sqlEquals(this.values.get(id), q)) out.add(id)
    }
    return [...out].sort()
  }

  /** Records a document's current version (undefined: deleted). */
  set(id: string, doc: Record<string, Json> | undefined): void {
    const old = this.values.get(id)
    if (old !== undefined) {
      for (const k of storedKeys(old)) {
        const s = this.byKey.get(k)
        s?.delete(id)
        if (s?.size === 0) this.byKey.delete(k)
      }
      this.values.delete(id)
    }
    const v = doc?.[this.def.field]
    const keys = storedKeys(v)
    if (keys.length === 0 || v === undefined) return
    this.values.set(id, v)
    for (const k of keys) {
      const s = this.byKey.get(k)
      if (s) s.add(id)
      else this.byKey.set(k, new Set([id]))
    }
  }
}
