import {expect} from 'chai'

import {commitMessage, parseTrailers} from '../src/engine/commit-message.js'
import type {WalEntry, WalOp} from '../src/engine/wal.js'

/** The message of earlier builds (lines joined, a regular expression per value): what every commit must still say. */
function joinedMessage(e: WalEntry): string {
  const clean = (v: string): string => v.replace(/[\r\n]+/g, ' ').slice(0, 200)
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

/** A small seeded generator (mulberry32), so a failure repeats. */
function seeded(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d_2b_79_f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

describe('svc commit message', () => {
  it('says exactly what the joined message of earlier builds said, for any ids, metadata and times', () => {
    const rand = seeded(26)
    const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]
    const text = (): string => {
      const parts = ['users:1', 'bench:t0-12345', 'a\nb', 'line\r\nbreak', '\r', 'x'.repeat(199), 'y'.repeat(200), 'z'.repeat(201), 'é€😀', '', ' ', 'k\n\n\r\nv']
      return pick(parts) + (rand() < 0.3 ? pick(parts) : '')
    }
    let time = Date.UTC(2026, 10, 29, 9, 0, 0)
    for (let i = 0; i < 5000; i++) {
      const ops: WalOp[] = Array.from({length: rand() < 0.8 ? 1 : 1 + Math.floor(rand() * 4)}, () => ({id: text() || 'users:2', op: pick(['put', 'delete', 'expire'] as const)}))
      const meta = rand() < 0.1 ? undefined : {...(rand() < 0.8 ? {origin: pick(['rest', 'redis', 'sql', 'expiry', text()])} : {}), ...(rand() < 0.3 ? {user: text()} : {}), ...(rand() < 0.6 ? {requestId: text()} : {})}
      // The same millisecond several times in a row (one group commit), then forward, sometimes back.
      if (rand() < 0.4) time += rand() < 0.1 ? -Math.floor(rand() * 5000) : Math.floor(rand() * 3)
      const e: WalEntry = {branch: 'main', ...(meta ? {meta} : {}), ops, seq: i + 1, time}
      const message = commitMessage(e)
      expect(message, JSON.stringify(e)).to.equal(joinedMessage(e))
      expect(parseTrailers(message).seq).to.equal(i + 1)
    }
  })
})
