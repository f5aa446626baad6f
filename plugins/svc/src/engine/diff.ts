import type {DiffEntry, Json} from './types.js'

function isObject(v: Json | undefined): v is {[key: string]: Json} {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function escape(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1')
}

/**
 * Field-level difference between two versions, paths in JSON Pointer form (RFC 6901). Arrays
 * compare as whole values: element-wise diffs of reordered arrays mislead more than they help.
 */
export function diffJson(before: Json | undefined, after: Json | undefined, path = ''): DiffEntry[] {
  if (before === undefined && after === undefined) return []
  if (before === undefined) return [{after, op: 'add', path: path || '/'}]
  if (after === undefined) return [{before, op: 'remove', path: path || '/'}]
  if (isObject(before) && isObject(after)) {
    const out: DiffEntry[] = []
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()
    for (const k of keys) out.push(...diffJson(before[k], after[k], `${path}/${escape(k)}`))
    return out
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [{after, before, op: 'change', path: path || '/'}]
}
