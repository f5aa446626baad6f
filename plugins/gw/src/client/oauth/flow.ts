import type {ClientEntry, TokenEntry, TokenStore} from '@toolkit/kit'
import type {AuthorizationServerMetadata, OAuthClientInformationMixed, OAuthTokens} from '@modelcontextprotocol/sdk/shared/auth.js'

import {randomBytes} from 'node:crypto'

import {AuthError, RegistrationUnavailable} from '../errors.js'
import {listenForCallback} from './callback.js'
import {callbackPorts} from './ports.js'
import {maskUrl} from '../url-mask.js'

/** What a 401's `WWW-Authenticate` told us (RFC 9728 / RFC 6750). */
export interface Challenge {
  resourceMetadataUrl?: URL
  scope?: string
}

export interface FlowContext {
  env: Record<string, string | undefined>
  log: (msg: string) => void
  /** Shows the authorization URL to the user (browser or printed). */
  openUrl: (url: string) => Promise<void>
  signal?: AbortSignal
  store: TokenStore
  /** The server's key in the store (its URL as written in servers.json); the URL itself by default. */
  storeKey?: string
}

interface Discovery {
  authorizationServerUrl: string
  metadata: AuthorizationServerMetadata
  resource?: string
  scope?: string
}

export const DEFAULT_CALLBACK_TIMEOUT_S = 300

const CLIENT_NAME = 'toolkit gw'

/** Steps 1-2: RFC 9728 protected-resource metadata, then RFC 8414 authorization-server metadata. */
async function discover(serverUrl: string, challenge: Challenge): Promise<Discovery | undefined> {
  const {discoverOAuthServerInfo} = await import('@modelcontextprotocol/sdk/client/auth.js')
  const {checkResourceAllowed, resourceUrlFromServerUrl} = await import('@modelcontextprotocol/sdk/shared/auth-utils.js')
  let info
  try {
    info = await discoverOAuthServerInfo(serverUrl, {resourceMetadataUrl: challenge.resourceMetadataUrl})
  } catch (error) {
    throw new AuthError(`OAuth discovery failed for ${maskUrl(serverUrl)}: ${(error as Error).message.split('\n')[0]}`, 'oauth_discovery_failed', error)
  }
  if (!info.authorizationServerMetadata) return undefined
  const prm = info.resourceMetadata
  if (prm && !checkResourceAllowed({configuredResource: prm.resource, requestedResource: resourceUrlFromServerUrl(serverUrl)})) {
    throw new AuthError(`protected-resource metadata names ${maskUrl(prm.resource)}, which is not ${maskUrl(serverUrl)}; refusing to send credentials there`, 'oauth_resource_mismatch')
  }
  return {
    authorizationServerUrl: info.authorizationServerUrl,
    metadata: info.authorizationServerMetadata,
    resource: prm?.resource,
    scope: challenge.scope || prm?.scopes_supported?.join(' ') || undefined,
  }
}

/** The store's shape of a token response: `expires_in` becomes an absolute `expires_at`. */
export function toTokenEntry(tokens: OAuthTokens, previous?: TokenEntry, now = Date.now()): TokenEntry {
  const entry: TokenEntry = {access_token: tokens.access_token, token_type: tokens.token_type || 'Bearer'}
  const refresh = tokens.refresh_token ?? previous?.refresh_token
  if (refresh) entry.refresh_token = refresh
  if (typeof tokens.expires_in === 'number') entry.expires_at = Math.floor(now / 1000) + Math.floor(tokens.expires_in)
  if (tokens.scope) entry.scope = tokens.scope
  return entry
}

const clientInformation = (c: ClientEntry): OAuthClientInformationMixed =>
  c.client_secret ? {client_id: c.client_id, client_secret: c.client_secret} : {client_id: c.client_id}

/** Step 3, reusing a stored registration when it was made for this very redirect URI. */
async function ensureClient(serverUrl: string, d: Discovery, redirectUri: string, ctx: FlowContext): Promise<ClientEntry> {
  const {client} = await ctx.store.get(ctx.storeKey ?? serverUrl)
  // A registration without redirect_uri was written by hand (a pre-registered client): trust it.
  if (client?.client_id && (!client.redirect_uri || client.redirect_uri === redirectUri)) return client
  if (!d.metadata.registration_endpoint) {
    throw new RegistrationUnavailable(`the authorization server ${d.authorizationServerUrl} does not offer dynamic client registration`)
  }
  const {registerClient} = await import('@modelcontextprotocol/sdk/client/auth.js')
  let full
  try {
    full = await registerClient(d.authorizationServerUrl, {
      clientMetadata: {
        client_name: CLIENT_NAME,
        grant_types: ['authorization_code', 'refresh_token'],
        redirect_uris: [redirectUri],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      metadata: d.metadata,
      scope: d.scope,
    })
  } catch (error) {
    throw new RegistrationUnavailable(`client registration at ${d.metadata.registration_endpoint} failed: ${(error as Error).message}`)
  }
  const entry: ClientEntry = {client_id: full.client_id, redirect_uri: redirectUri}
  if (full.client_secret) entry.client_secret = full.client_secret
  if (client?.client_id) ctx.log(`callback port changed: registered a new OAuth client for ${redirectUri}`)
  await ctx.store.setClient(ctx.storeKey ?? serverUrl, entry)
  return entry
}

/**
 * The OAuth 2.0 authorization-code flow of the spec, steps 1-8: discovery, registration, PKCE
 * S256, browser, local callback with a state check and a timeout, code exchange, tokens saved
 * with `expires_at`. Throws RegistrationUnavailable when the manual prompt should take over.
 */
export async function runOAuthFlow(serverUrl: string, challenge: Challenge, ctx: FlowContext): Promise<TokenEntry> {
  const d = await discover(serverUrl, challenge)
  if (!d) throw new RegistrationUnavailable(`${maskUrl(serverUrl)} publishes no OAuth authorization-server metadata`)
  if (d.metadata.code_challenge_methods_supported && !d.metadata.code_challenge_methods_supported.includes('S256')) {
    throw new AuthError(`the authorization server ${d.authorizationServerUrl} does not support PKCE S256`, 'oauth_unsupported')
  }
  const {client: stored} = await ctx.store.get(ctx.storeKey ?? serverUrl)
  const preferred = stored?.redirect_uri ? Number(new URL(stored.redirect_uri).port) || undefined : undefined
  const listener = await listenForCallback(callbackPorts(ctx.env), preferred)
  try {
    const client = await ensureClient(serverUrl, d, listener.redirectUri, ctx)
    const {exchangeAuthorization, startAuthorization} = await import('@modelcontextprotocol/sdk/client/auth.js')
    const state = randomBytes(24).toString('base64url')
    const {authorizationUrl, codeVerifier} = await startAuthorization(d.authorizationServerUrl, {
      clientInformation: clientInformation(client),
      metadata: d.metadata,
      redirectUrl: listener.redirectUri,
      resource: d.resource,
      scope: d.scope,
      state,
    })
    await ctx.openUrl(authorizationUrl.href)
    const timeoutS = Number(ctx.env.GW_OAUTH_TIMEOUT) > 0 ? Number(ctx.env.GW_OAUTH_TIMEOUT) : DEFAULT_CALLBACK_TIMEOUT_S
    const code = await listener.waitForCode(state, timeoutS * 1000, ctx.signal)
    let tokens
    try {
      tokens = await exchangeAuthorization(d.authorizationServerUrl, {
        authorizationCode: code,
        clientInformation: clientInformation(client),
        codeVerifier,
        metadata: d.metadata,
        redirectUri: listener.redirectUri,
        resource: d.resource,
      })
    } catch (error) {
      // A client the server has forgotten must not be reused by the next attempt.
      if ((error as {errorCode?: string}).errorCode === 'invalid_client') await ctx.store.remove(ctx.storeKey ?? serverUrl, 'client')
      throw new AuthError(`token exchange failed: ${(error as Error).message}`, 'oauth_exchange_failed', error)
    }
    const entry = toTokenEntry(tokens)
    await ctx.store.setToken(ctx.storeKey ?? serverUrl, entry)
    return entry
  } finally {
    await listener.close()
  }
}

/** Exchanges the stored refresh token for a new access token and saves it; throws on refusal. */
export async function refreshStoredToken(serverUrl: string, token: TokenEntry, ctx: FlowContext): Promise<TokenEntry> {
  if (!token.refresh_token) throw new AuthError('no refresh token', 'refresh_failed')
  const {client} = await ctx.store.get(ctx.storeKey ?? serverUrl)
  if (!client?.client_id) throw new AuthError('no client registration to refresh with', 'refresh_failed')
  const d = await discover(serverUrl, {})
  if (!d) throw new AuthError(`${maskUrl(serverUrl)} no longer publishes OAuth metadata`, 'refresh_failed')
  const {refreshAuthorization} = await import('@modelcontextprotocol/sdk/client/auth.js')
  let tokens
  try {
    tokens = await refreshAuthorization(d.authorizationServerUrl, {
      clientInformation: clientInformation(client),
      metadata: d.metadata,
      refreshToken: token.refresh_token,
      resource: d.resource,
    })
  } catch (error) {
    throw new AuthError(`token refresh refused: ${(error as Error).message}`, 'refresh_failed', error)
  }
  const entry = toTokenEntry(tokens, token)
  await ctx.store.setToken(ctx.storeKey ?? serverUrl, entry)
  return entry
}
