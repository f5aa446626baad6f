import type {WalEntry} from './wal.js'
import type {WriteMeta} from './types.js'

/** A value as one trailer line: line breaks folded to a space, at most 200 characters. */
function clean(v: string): string {
  // Ids and request ids almost never hold a line break: those are returned as they are, without a regular expression.
  if (v.indexOf('\n') === -1 && v.indexOf('\r') === -1) return v.length > 200 ? v.slice(0, 200) : v
  return v.replace(/[\r\n]+/g, ' ').slice(0, 200)
}

/** The last time formatted: the writes of one group commit mostly share their millisecond. */
let isoOf = {iso: '', time: Number.NaN}

function isoTime(time: number): string {
  if (time !== isoOf.time) isoOf = {iso: new Date(time).toISOString(), time}
  return isoOf.iso
}

/**
 * The commit message: a subject naming the operation and the id, then trailers (as
 * `git interpret-trailers` reads them) carrying who made the write and the log sequence number.
 * Built as one string on every write (an array joined and a regular expression per line took
 * 3-4 us of the event loop's ~100 per write; docs/benchmarks.md, "write-loop").
 */
export function commitMessage(e: WalEntry): string {
  const op = e.ops.length === 1 ? e.ops[0].op : 'batch'
  let s = `${e.ops.length === 1 ? `${op} ${clean(e.ops[0].id)}` : `batch of ${e.ops.length} operations`}\n\nSvc-Op: ${op}\n`
  for (const o of e.ops) s += `Svc-Id: ${clean(o.id)}\n`
  s += `Svc-Seq: ${e.seq}\nSvc-Time: ${isoTime(e.time)}\n`
  if (e.meta?.origin) s += `Svc-Origin: ${clean(e.meta.origin)}\n`
  if (e.meta?.user) s += `Svc-User: ${clean(e.meta.user)}\n`
  if (e.meta?.requestId) s += `Svc-Request-Id: ${clean(e.meta.requestId)}\n`
  return s
}

export interface ParsedCommit {
  meta: WriteMeta
  op?: string
  seq?: number
  time?: string
}

export function parseTrailers(message: string): ParsedCommit {
  const out: ParsedCommit = {meta: {}}
  for (const line of message.split('\n')) {
    const m = /^Svc-([A-Za-z-]+): (.*)$/.exec(line)
    if (!m) continue
    const [, key, value] = m
    if (key === 'Seq') out.seq = Number(value)
    else if (key === 'Time') out.time = value
    else if (key === 'Op') out.op = value
    else if (key === 'Origin') out.meta.origin = value
    else if (key === 'User') out.meta.user = value
    else if (key === 'Request-Id') out.meta.requestId = value
  }
  return out
}
