import {createHash, randomBytes} from 'node:crypto'

/** POSTs a form to the authorization server and returns the JSON answer. */
export async function postForm(base: string, path: string, params: Record<string, string>): Promise<{body: Record<string, string>; status: number}> {
  const res = await fetch(new URL(path, base), {body: new URLSearchParams(params), headers: {'content-type': 'application/x-www-form-urlencoded'}, method: 'POST'})
  return {body: (await res.json()) as Record<string, string>, status: res.status}
}

/** The authorization request of a PKCE (S256) sign-in for `clientId`. */
export function authorizationUrl(base: string, clientId: string, redirectUri: string, verifier: string): URL {
  const url = new URL('/authorize', base)
  for (const [k, v] of Object.entries({
    client_id: clientId,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    redirect_uri: redirectUri,
    response_type: 'code',
    state: 's',
  }))
    url.searchParams.set(k, v)
  return url
}

/**
 * One interactive sign-in at `gw serve`'s built-in authorization server, played by the test:
 * register a public client, authorize through the "reverse proxy" (the user header), exchange the code.
 */
export async function signInAtOAuthAs(base: string, redirectUri: string, user: string): Promise<{clientId: string; tokens: Record<string, string>}> {
  const reg = await fetch(new URL('/register', base), {
    body: JSON.stringify({grant_types: ['authorization_code', 'refresh_token'], redirect_uris: [redirectUri], response_types: ['code'], token_endpoint_auth_method: 'none'}),
    headers: {'content-type': 'application/json'},
    method: 'POST',
  })
  const {client_id: clientId} = (await reg.json()) as {client_id: string}
  const verifier = randomBytes(32).toString('base64url')
  const redirect = await fetch(authorizationUrl(base, clientId, redirectUri, verifier), {headers: {'x-forwarded-user': user}, redirect: 'manual'})
  const code = new URL(redirect.headers.get('location')!).searchParams.get('code')!
  const tokens = await postForm(base, '/token', {client_id: clientId, code, code_verifier: verifier, grant_type: 'authorization_code', redirect_uri: redirectUri})
  if (tokens.status !== 200) throw new Error(`sign-in failed: ${tokens.status} ${JSON.stringify(tokens.body)}`)
  return {clientId, tokens: tokens.body}
}
