import type {TokenEntry, TokenStore} from '@toolkit/kit'

import {AuthError, RegistrationUnavailable} from './errors.js'
import {type TokenPrompt, tokenQuestion} from './manual-prompt.js'
import {type Challenge, type FlowContext, refreshStoredToken, runOAuthFlow} from './oauth/flow.js'
import {maskUrl} from './url-mask.js'

/** A token is treated as expired this many seconds early, so it does not lapse mid-call. */
export const EXPIRY_SKEW_S = 30

export type CredentialSource = 'config' | 'manual' | 'none' | 'oauth' | 'refreshed' | 'store'

export interface Credential {
  source: CredentialSource
  token?: TokenEntry
}

export interface ChainOptions extends FlowContext {
  interactive: boolean
  now?: () => number
  prompt: TokenPrompt
  serverName: string
}

export const isExpired = (t: TokenEntry, nowMs = Date.now()): boolean =>
  typeof t.expires_at === 'number' && t.expires_at <= Math.floor(nowMs / 1000) + EXPIRY_SKEW_S

/** Past its expiry without any margin: a 401 to it says the token is old, not that the grant is dead. */
const lapsed = (t: TokenEntry, nowMs = Date.now()): boolean => typeof t.expires_at === 'number' && t.expires_at <= Math.floor(nowMs / 1000)

export function authorizationHeader(t: TokenEntry): string {
  const type = !t.token_type || t.token_type.toLowerCase() === 'bearer' ? 'Bearer' : t.token_type
  return `${type} ${t.access_token}`
}

/**
 * The client side of the spec's credential table for one HTTP server: the saved token (refreshed
 * when expired), then on 401 the OAuth flow, then the manual prompt when registration is not
 * possible. The config's Authorization header is handled before this chain is consulted.
 */
export class CredentialChain {
  private refreshed = false
  /** One more refresh for a token that lapsed between being issued and being used (a slow machine, a short-lived token). */
  private lapsedRefresh = true

  /** The server's entry in the store: its URL as written in servers.json. */
  private readonly key: string

  constructor(private readonly url: string, private readonly o: ChainOptions) {
    this.key = o.storeKey ?? url
  }

  private get store(): TokenStore {
    return this.o.store
  }

  /** Saved token present → used; expired → refreshed; refresh fails → OAuth flow again. */
  async initial(): Promise<Credential> {
    const {token} = await this.store.get(this.key)
    if (!token?.access_token) return {source: 'none'}
    if (!isExpired(token, this.o.now?.())) return {source: 'store', token}
    if (token.refresh_token) {
      const fresh = await this.tryRefresh(token)
      if (fresh) return {source: 'refreshed', token: fresh}
    } else {
      this.o.log(`the saved token for ${this.o.serverName} has expired`)
    }
    return this.acquire({}, 'the saved token has expired')
  }

  /** The server answered 401 to `sent`: refresh once if possible, else start over. */
  async unauthorized(challenge: Challenge, sent: Credential): Promise<Credential> {
    const again = sent.token?.refresh_token !== undefined && this.lapsedRefresh && lapsed(sent.token, this.o.now?.())
    if (sent.token && (again || ((sent.source === 'store' || sent.source === 'refreshed') && !this.refreshed && sent.token.refresh_token))) {
      if (this.refreshed) this.lapsedRefresh = false
      const fresh = await this.tryRefresh(sent.token)
      if (fresh) return {source: 'refreshed', token: fresh}
      return this.acquire(challenge, 'the server rejected the saved token')
    }
    if (sent.token && (sent.source === 'store' || sent.source === 'refreshed')) {
      // The server rejects it: a dead token must not be sent again by the next run. A token whose
      // refresh token was honoured moments ago is not dead (its access token lapsed on the way):
      // it stays, so the next run refreshes it instead of asking the user to sign in again.
      if (!(sent.source === 'refreshed' && sent.token.refresh_token)) await this.dropToken(sent.token)
      return this.acquire(challenge, 'the server rejected the saved token')
    }
    if (sent.source === 'oauth' || sent.source === 'manual') {
      throw new AuthError(`${this.o.serverName}: the server rejected the token it just issued (401); check the server's OAuth configuration`, 'auth_rejected')
    }
    return this.acquire(challenge, 'the server requires authentication')
  }

  /** A 401 inside an established session: refresh if possible, never prompt. */
  async renewInSession(token: TokenEntry): Promise<TokenEntry | undefined> {
    if (!token.refresh_token) return undefined
    return this.tryRefresh(token)
  }

  /**
   * Redeems the refresh token once across every process sharing the store: the exchange runs
   * under the store's per-server lock, and the entry is re-read inside it, so a process that
   * waited finds the token another one just obtained and uses it instead of presenting a refresh
   * token that rotation already consumed (which makes servers following RFC 9700 revoke the grant).
   */
  private async tryRefresh(token: TokenEntry): Promise<TokenEntry | undefined> {
    this.refreshed = true
    const now = () => this.o.now?.()
    // A token that differs from the one we hold and is still good was saved by someone else: use it.
    const newer = (current: TokenEntry | undefined, than: TokenEntry): TokenEntry | undefined =>
      current?.access_token && current.access_token !== than.access_token && !isExpired(current, now()) ? current : undefined
    const refreshOnce = async (): Promise<TokenEntry | undefined> => {
      const {token: current} = await this.store.get(this.key)
      const taken = newer(current, token)
      if (taken) return taken
      // The stored refresh token is the newest one anybody holds (it may have rotated since we read ours).
      const base = current?.refresh_token ? current : token
      try {
        const fresh = await refreshStoredToken(this.url, base, this.o)
        this.o.log(`refreshed the access token for ${this.o.serverName}`)
        return fresh
      } catch (error) {
        const {token: after} = await this.store.get(this.key)
        const other = newer(after, base)
        if (other) return other
        this.o.log(`token refresh for ${this.o.serverName} failed (${(error as Error).message}); signing in again`)
        await this.dropToken(base)
        return undefined
      }
    }
    try {
      return this.store.exclusive ? await this.store.exclusive(this.key, refreshOnce) : await refreshOnce()
    } catch (error) {
      // Waiting for another holder ran out: its result may have landed meanwhile.
      const taken = newer((await this.store.get(this.key)).token, token)
      if (taken) return taken
      throw error
    }
  }

  /** Forgets `token` unless another process has already replaced it with a newer one. */
  private async dropToken(token: TokenEntry): Promise<void> {
    await this.store.update((data) => {
      const current = data.tokens[this.key]
      if (current && current.access_token === token.access_token && current.refresh_token === token.refresh_token) delete data.tokens[this.key]
    })
  }

  /** OAuth flow, or the manual prompt when registration fails. Needs a person. */
  private async acquire(challenge: Challenge, reason: string): Promise<Credential> {
    if (!this.o.interactive) {
      throw new AuthError(
        `${this.o.serverName}: ${reason} and no terminal is attached to sign in. ` +
          `Run \`toolkit gw auth login ${this.o.serverName}\` in a terminal, pipe a token to \`toolkit gw auth login ${this.o.serverName} --token-stdin\`, ` +
          `or set headers.Authorization to "Bearer \${TOKEN_VAR}" in servers.json`,
      )
    }
    try {
      return {source: 'oauth', token: await runOAuthFlow(this.url, challenge, this.o)}
    } catch (error) {
      if (!(error instanceof RegistrationUnavailable)) throw error
      return {source: 'manual', token: await this.manual(error.message)}
    }
  }

  async manual(reason: string): Promise<TokenEntry> {
    const answer = (await this.o.prompt(tokenQuestion(this.o.serverName, maskUrl(this.key), reason))).trim()
    if (!answer) throw new AuthError(`${this.o.serverName}: no token entered`, 'auth_cancelled')
    const token: TokenEntry = {access_token: answer, token_type: 'Bearer'}
    await this.store.setToken(this.key, token)
    return token
  }
}
