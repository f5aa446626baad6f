import type {WalEntry} from './wal.js'
import type {WriteMeta} from './types.js'

function clean(v: string): string {
  return v.replace(/[\r\n]+/g, ' ').slice(0, 200)
}

/**
 * The commit message: a subject naming the operation and the id, then trailers (as
 * `git interpret-trailers` reads them) carrying who made the write and the log sequence number.
 */
export function commitMessage(e: WalEntry): string {
  const subject = e.ops.length === 1 ? `${e.ops[0].op} ${clean(e.ops[0].id)}` : `batch of ${e.ops.length} operations`
  const lines = [subject, '']
  lines.push(`Svc-Op: ${e.ops.length === 1 ? e.ops[0].op : 'batch'}`)
  for (const op of e.ops) lines.push(`Svc-Id: ${clean(op.id)}`)
  lines.push(`Svc-Seq: ${e.seq}`, `Svc-Time: ${new Date(e.time).toISOString()}`)
  if (e.meta?.origin) lines.push(`Svc-Origin: ${clean(e.meta.origin)}`)
  if (e.meta?.user) lines.push(`Svc-User: ${clean(e.meta.user)}`)
  if (e.meta?.requestId) lines.push(`Svc-Request-Id: ${clean(e.meta.requestId)}`)
  return `${lines.join('\n')}\n`
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
