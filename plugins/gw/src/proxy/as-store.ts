import type {OAuthClientInformationFull} from '@modelcontextprotocol/sdk/shared/auth.js'

import {loadState, stateWriter} from './oauth-state.js'
import type {Registration} from './registrations.js'

export interface CodeGrant {
  challenge: string
  clientId: string
  expiresAt: number
  redirectUri: string
  roles: string[]
  scopes: string[]
  subject: string
}

export interface RefreshGrant {
  clientId: string
  expiresAt: number
  family: string
  roles: string[]
  scopes: string[]
  subject: string
}

/** The store cannot be reached: OAuth endpoints answer 503 until it is back. */
export class StoreUnavailableError extends Error {}

/**
 * Where the built-in authorization server keeps its state: registered clients, authorization
 * codes, refresh-token grants (by SHA-256 of the token), rotated tokens and revoked families.
 * `MemoryAsStore` (one process, saved to a file) or `RedisAsStore` (shared by replicas). Every
 * "take" is atomic, so a code or a refresh token is redeemed once across all replicas.
 */
export interface AsStore {
  /** False while a shared store is unreachable. */
  available(): boolean
  /** Commands the store refused or could not run so far (a request compares it before and after). */
  failures(): number
  close(): Promise<void>
  getClient(id: string): Promise<OAuthClientInformationFull | undefined>
  /** Registers a client; returns the ids of unused registrations dropped to make room. Throws when full of clients in use. */
  registerClient(client: OAuthClientInformationFull, registration: Registration): Promise<string[]>
  /** The client signed in: it no longer expires for being unused. */
  markUsed(id: string): Promise<void>
  putCode(code: string, grant: CodeGrant): Promise<void>
  takeCode(code: string): Promise<CodeGrant | undefined>
  putRefresh(key: string, grant: RefreshGrant): Promise<void>
  takeRefresh(key: string): Promise<RefreshGrant | undefined>
  getRefresh(key: string): Promise<RefreshGrant | undefined>
  deleteRefresh(key: string): Promise<void>
  /** A refresh token that was rotated away: presenting it again revokes its family. */
  putRotated(key: string, family: string, expiresAt: number): Promise<void>
  takeRotated(key: string): Promise<string | undefined>
  revokeFamily(family: string, until: number): Promise<void>
  familyRevoked(family: string): Promise<boolean>
}

export class RegistryFullError extends Error {}

const now = () => Math.floor(Date.now() / 1000)

/**
 * The single-process store: maps in memory, saved to `stateFile` (mode 0600, refresh tokens only
 * as digests) so a restart keeps registrations and grants; codes live only in memory.
 */
export class MemoryAsStore implements AsStore {
  readonly clients = new Map<string, OAuthClientInformationFull>()
  private readonly codes = new Map<string, CodeGrant>()
  private readonly refresh = new Map<string, RefreshGrant>()
  /** When and from where each client registered, and whether it ever signed in. */
  readonly registrations = new Map<string, Registration>()
  private readonly rotated = new Map<string, {expiresAt: number; family: string}>()
  private writer: undefined | {flush(): Promise<void>; schedule(): void}

  constructor(private readonly maxClients: number) {}

  /** Loads `file` (missing is empty) and saves every change to it from then on. */
  static async open(file: string | undefined, maxClients: number, unusedExpired: (r: Registration) => boolean, log?: (m: string) => void): Promise<MemoryAsStore> {
    const s = new MemoryAsStore(maxClients)
    if (!file) return s
    const saved = await loadState(file)
    for (const [k, v] of Object.entries(saved.refresh)) s.refresh.set(k, v as RefreshGrant)
    for (const [k, v] of Object.entries(saved.rotated)) s.rotated.set(k, v as {expiresAt: number; family: string})
    const granted = new Set([...s.refresh.values()].map((g) => g.clientId))
    for (const [k, v] of Object.entries(saved.clients)) {
      // A file from before registrations were tracked: a client with a grant is in use; others start their unused time now.
      const r = (saved.registrations?.[k] as Registration | undefined) ?? {at: now(), source: 'unknown', used: granted.has(k)}
      if (unusedExpired(r)) continue
      s.clients.set(k, v as OAuthClientInformationFull)
      s.registrations.set(k, r)
    }
    s.writer = stateWriter(
      file,
      () => ({
        clients: Object.fromEntries(s.clients),
        refresh: Object.fromEntries(s.refresh),
        registrations: Object.fromEntries(s.registrations),
        rotated: Object.fromEntries(s.rotated),
      }),
      log,
    )
    return s
  }

  private changed(): void {
    this.writer?.schedule()
  }

  available(): boolean {
    return true
  }

  failures(): number {
    return 0
  }

  async close(): Promise<void> {
    await this.writer?.flush()
  }

  /** Drops what expired: codes, grants, rotated tokens, and unused registrations (their ids are returned). */
  sweep(unusedExpired: (r: Registration) => boolean): string[] {
    const t = now()
    const before = this.refresh.size + this.rotated.size + this.clients.size
    for (const [k, v] of this.codes) if (v.expiresAt <= t) this.codes.delete(k)
    for (const [k, v] of this.refresh) if (v.expiresAt <= t) this.refresh.delete(k)
    for (const [k, v] of this.rotated) if (v.expiresAt <= t) this.rotated.delete(k)
    const dropped: string[] = []
    for (const [k, r] of this.registrations) {
      if (unusedExpired(r)) {
        dropped.push(k)
        this.forget(k)
      }
    }
    if (this.refresh.size + this.rotated.size + this.clients.size !== before) this.changed()
    return dropped
  }

  private forget(id: string): void {
    this.registrations.delete(id)
    this.clients.delete(id)
  }

  async getClient(id: string) {
    return this.clients.get(id)
  }

  async registerClient(client: OAuthClientInformationFull, registration: Registration): Promise<string[]> {
    const dropped: string[] = []
    if (this.clients.size >= this.maxClients) {
      // Full: the oldest registration that never signed in makes room (Map keeps insertion order).
      const idle = [...this.registrations].find(([, r]) => !r.used)
      if (!idle) throw new RegistryFullError('too many registered clients')
      this.forget(idle[0])
      dropped.push(idle[0])
    }
    this.clients.set(client.client_id, client)
    this.registrations.set(client.client_id, registration)
    this.changed()
    return dropped
  }

  async markUsed(id: string) {
    const r = this.registrations.get(id)
    if (r) {
      r.used = true
      this.changed()
    }
  }

  async putCode(code: string, grant: CodeGrant) {
    this.codes.set(code, grant)
  }

  async takeCode(code: string) {
    const g = this.codes.get(code)
    this.codes.delete(code)
    return g
  }

  async putRefresh(key: string, grant: RefreshGrant) {
    this.refresh.set(key, grant)
    this.changed()
  }

  async takeRefresh(key: string) {
    const g = this.refresh.get(key)
    if (g) {
      this.refresh.delete(key)
      this.changed()
    }
    return g
  }

  async getRefresh(key: string) {
    return this.refresh.get(key)
  }

  async deleteRefresh(key: string) {
    if (this.refresh.delete(key)) this.changed()
  }

  async putRotated(key: string, family: string, expiresAt: number) {
    this.rotated.set(key, {expiresAt, family})
    this.changed()
  }

  async takeRotated(key: string) {
    const r = this.rotated.get(key)
    if (r) {
      this.rotated.delete(key)
      this.changed()
    }
    return r?.family
  }

  async revokeFamily(family: string) {
    for (const [k, v] of this.refresh) if (v.family === family) this.refresh.delete(k)
    this.changed()
  }

  async familyRevoked() {
    // revokeFamily removed every grant of the family: nothing of it is left to refuse.
    return false
  }
}
