import type {Server as McpServer} from '@modelcontextprotocol/sdk/server/index.js'

/** One client session on the proxy, whichever transport carries it. */
export interface Session {
  kind: 'sse' | 'streamable'
  lastSeen: number
  /** Whose session count it uses (the subject; for anonymous users, the subject at an address). */
  owner: string
  server: McpServer
  subject: string
  transport: {close(): Promise<void>}
}

export type Admission = {ok: true} | {message: string; ok: false}

/**
 * The open sessions of all transports (Streamable HTTP and legacy SSE) and their limits: at most
 * `perOwner` per user, at most `total` in all (the least recently used one is closed to make
 * room), and sessions idle for `idleMs` are closed by `sweep`.
 */
export class SessionRegistry {
  private readonly counts = new Map<string, number>()
  private readonly sessions = new Map<string, Session>()

  constructor(private readonly limits: {idleMs: number; perOwner: number; total: number}) {}

  /** May `owner` open one more session? Makes room by closing the least recently used one when the proxy is full. */
  admit(owner: string, subject: string): Admission {
    if ((this.counts.get(owner) ?? 0) >= this.limits.perOwner) {
      return {message: `too many open sessions for "${subject}" (${this.limits.perOwner}); close some (DELETE /mcp) or let idle ones expire`, ok: false}
    }
    if (this.sessions.size >= this.limits.total) {
      let lru: [string, Session] | undefined
      for (const entry of this.sessions) if (!lru || entry[1].lastSeen < lru[1].lastSeen) lru = entry
      if (lru) this.close(lru[0], lru[1])
    }
    return {ok: true}
  }

  add(id: string, s: Session): void {
    this.sessions.set(id, s)
    this.counts.set(s.owner, (this.counts.get(s.owner) ?? 0) + 1)
  }

  get(id: string): Session | undefined {
    return this.sessions.get(id)
  }

  /** Removes a session that ended (its transport closed); a no-op for one already replaced or removed. */
  forget(id: string, s: Session): void {
    if (this.sessions.get(id) !== s) return
    this.sessions.delete(id)
    const n = (this.counts.get(s.owner) ?? 1) - 1
    if (n > 0) this.counts.set(s.owner, n)
    else this.counts.delete(s.owner)
  }

  private close(id: string, s: Session): void {
    this.forget(id, s)
    s.transport.close().catch(() => {})
  }

  /** Closes sessions idle longer than the limit. */
  sweep(): void {
    const cutoff = Date.now() - this.limits.idleMs
    for (const [id, s] of this.sessions) if (s.lastSeen < cutoff) this.close(id, s)
  }

  *servers(): Generator<McpServer> {
    for (const s of this.sessions.values()) yield s.server
  }

  async closeAll(): Promise<void> {
    const all = [...this.sessions.values()]
    this.sessions.clear()
    this.counts.clear()
    await Promise.all(all.map((s) => s.transport.close().catch(() => {})))
  }
}
