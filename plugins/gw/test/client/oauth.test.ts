import {expect} from 'chai'
import {readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'

import {connectServer, type ConnectOptions} from '../../src/client/connect.js'
import {startOAuthMcpServer, type OAuthMcpFixture} from '../fixtures/oauth-mcp-server.mjs'
import {browser, freePort, occupy, quiet, sandbox, type Sandbox} from './helpers.js'

describe('gw client: OAuth against an SDK-built protected MCP server', () => {
  let server: OAuthMcpFixture
  let box: Sandbox
  let port: number

  beforeEach(async () => {
    server = await startOAuthMcpServer()
    box = sandbox()
    port = await freePort()
  })
  afterEach(async () => {
    await server.close()
    box.remove()
  })

  const options = (extra: Partial<ConnectOptions> = {}): ConnectOptions => ({
    env: {GW_OAUTH_CALLBACK_PORT: String(port), GW_OAUTH_TIMEOUT: '10'},
    interactive: true,
    log: quiet(),
    openUrl: browser(),
    prompt: async () => {
      throw new Error('the manual prompt must not be shown')
    },
    tokenStore: box.store,
    ...extra,
  })

  async function whoami(o: ConnectOptions): Promise<{auth: string; text: string}> {
    const c = await connectServer('fixture', {url: server.url}, o)
    try {
      const r = (await c.client.callTool({arguments: {}, name: 'whoami'})) as {content: Array<{text: string}>}
      return {auth: c.auth, text: r.content[0].text}
    } finally {
      await c.close()
    }
  }

  it('first login: discovery, registration, PKCE, callback, tokens saved with expires_at in a 0600 file', async () => {
    const visited: string[] = []
    const before = Math.floor(Date.now() / 1000)
    const r = await whoami(options({openUrl: browser(visited)}))
    const after = Math.ceil(Date.now() / 1000)
    expect(r.auth).to.equal('oauth')
    expect(server.stats.registrations).to.equal(1)
    expect(server.stats.codeExchanges).to.equal(1)
    const auth = new URL(visited[0])
    expect(auth.searchParams.get('code_challenge_method')).to.equal('S256')
    expect(auth.searchParams.get('redirect_uri')).to.equal(`http://localhost:${port}/callback`)
    expect(auth.searchParams.get('state')).to.have.length.greaterThan(20)
    expect(auth.searchParams.get('resource')).to.equal(server.url)
    const file = JSON.parse(readFileSync(box.authFile, 'utf8'))
    const clientId = file.clients[server.url].client_id
    expect(r.text).to.equal(`client ${clientId}`)
    expect(file.clients[server.url].redirect_uri).to.equal(`http://localhost:${port}/callback`)
    const token = file.tokens[server.url]
    expect(token.access_token).to.match(/^at-/)
    expect(token.refresh_token).to.match(/^rt-/)
    // Issued an hour ahead of some moment of the sign-in (which a loaded machine can make long).
    expect(token.expires_at).to.be.within(before + 3599, after + 3601)
    expect(statSync(box.authFile).mode & 0o777).to.equal(0o600)
  })

  it('saved token reuse: the second connection neither registers nor opens a browser', async () => {
    await whoami(options())
    const r = await whoami(options({openUrl: async () => expect.fail('browser opened again')}))
    expect(r.auth).to.equal('store')
    expect(server.stats.registrations).to.equal(1)
    expect(server.stats.authorizations).to.equal(1)
  })

  it('expired token: refreshed automatically, the new token saved', async () => {
    server.settings.accessTtl = 5 // inside the client's 30 s safety margin: already "expired"
    await whoami(options())
    const first = JSON.parse(readFileSync(box.authFile, 'utf8')).tokens[server.url]
    server.settings.accessTtl = 3600
    const r = await whoami(options({openUrl: async () => expect.fail('browser opened for a refreshable token')}))
    expect(r.auth).to.equal('refreshed')
    expect(server.stats.refreshes).to.equal(1)
    const second = JSON.parse(readFileSync(box.authFile, 'utf8')).tokens[server.url]
    expect(second.access_token).to.not.equal(first.access_token)
    expect(second.expires_at).to.be.greaterThan(first.expires_at)
  })

  it('a token the server revoked is refreshed on 401, without a new login', async () => {
    await whoami(options())
    server.tokens.clear()
    const r = await whoami(options({openUrl: async () => expect.fail('browser opened')}))
    expect(r.auth).to.equal('refreshed')
    expect(server.stats.refreshes).to.equal(1)
  })

  it('a token revoked during an open session is refreshed and the request repeated, without a prompt', async () => {
    await whoami(options())
    const c = await connectServer('fixture', {url: server.url}, options({openUrl: async () => expect.fail('browser opened'), prompt: async () => expect.fail('prompted')}))
    try {
      server.tokens.clear()
      const r = (await c.client.callTool({arguments: {a: 2, b: 5}, name: 'add'})) as {content: Array<{text: string}>}
      expect(r.content[0].text).to.equal('7')
      expect(server.stats.refreshes).to.equal(1)
      const saved = JSON.parse(readFileSync(box.authFile, 'utf8')).tokens[server.url].access_token
      expect(server.tokens.has(saved), 'the refreshed token is saved').to.equal(true)
      server.settings.failRefresh = true
      server.tokens.clear()
      let failure = ''
      await c.client.callTool({arguments: {}, name: 'whoami'}).catch((error: Error) => {
        failure = error.message
      })
      expect(failure).to.match(/invalid_token/)
    } finally {
      await c.close()
    }
  })

  it('a refreshed token that lapses before it is used is refreshed once more; the saved sign-in is never erased by it', async () => {
    server.settings.accessTtl = 5
    await whoami(options())
    // Every token issued now is already past its expiry when it arrives (a slow machine, a very short-lived token).
    server.settings.accessTtl = -1
    const noTerminal = options({interactive: false, openUrl: async () => expect.fail('browser opened')})
    const error = await whoami(noTerminal).then(
      () => expect.fail('connected with tokens the server refuses'),
      (error_: Error) => error_,
    )
    expect(error.message).to.include('no terminal is attached to sign in')
    expect(server.stats.refreshes, 'the initial refresh and one more for the token that lapsed').to.equal(2)
    const kept = JSON.parse(readFileSync(box.authFile, 'utf8')).tokens[server.url] as undefined | {refresh_token?: string}
    expect(kept?.refresh_token, 'the refresh token the server just issued is kept').to.match(/^rt-/)
    // Once tokens live long enough again, the next run refreshes with it: no new sign-in.
    server.settings.accessTtl = 3600
    const r = await whoami(noTerminal)
    expect(r.auth).to.equal('refreshed')
    expect(server.stats.authorizations).to.equal(1)
  })

  it('a wrong Authorization header on another entry with the same URL leaves the saved OAuth tokens alone', async () => {
    await whoami(options())
    const before = readFileSync(box.authFile, 'utf8')
    const error = await connectServer('wrong', {headers: {Authorization: 'Bearer wrong'}, url: server.url}, options()).then(
      () => expect.fail('connected with a wrong header'),
      (error_: Error) => error_,
    )
    expect(error.message).to.match(/rejected the Authorization header from servers.json/)
    expect(readFileSync(box.authFile, 'utf8')).to.equal(before)
    const r = await whoami(options({openUrl: async () => expect.fail('browser opened')}))
    expect(r.auth).to.equal('store')
  })

  it('refresh failure: the OAuth flow starts again', async () => {
    server.settings.accessTtl = 5
    await whoami(options())
    server.settings.failRefresh = true
    const r = await whoami(options())
    expect(r.auth).to.equal('oauth')
    expect(server.stats.authorizations).to.equal(2)
    expect(server.stats.registrations).to.equal(1)
  })

  it('a refresh lost to another process (single-use refresh token) takes the token that process saved', async () => {
    server.settings.accessTtl = 5
    await whoami(options())
    const stale = JSON.parse(readFileSync(box.authFile, 'utf8')).tokens[server.url]
    server.settings.accessTtl = 3600
    // The other process: refreshes (the server rotates the refresh token) and saves the result.
    await whoami(options())
    expect(server.stats.refreshes).to.equal(1)
    // This process read the store before the other one saved: it sees the stale token first.
    let first = true
    const racing = {
      ...box.store,
      async get(url: string) {
        const now = await box.store.get(url)
        if (!first) return now
        first = false
        return {...now, token: stale}
      },
    }
    const r = await whoami(options({openUrl: async () => expect.fail('browser opened'), tokenStore: racing}))
    expect(r.auth).to.equal('refreshed')
    expect(server.stats.authorizations).to.equal(1)
  })

  it('deleted store entry: the next connection authenticates afresh', async () => {
    await whoami(options())
    const data = JSON.parse(readFileSync(box.authFile, 'utf8'))
    delete data.tokens[server.url]
    writeFileSync(box.authFile, JSON.stringify(data))
    expect((await whoami(options())).auth).to.equal('oauth')
    expect(server.stats.authorizations).to.equal(2)
    expect(server.stats.registrations).to.equal(1)
    rmSync(box.authFile)
    expect((await whoami(options())).auth).to.equal('oauth')
    expect(server.stats.registrations).to.equal(2)
  })

  it('callback port change: a new client is registered for the new redirect URI and login works', async () => {
    await whoami(options())
    const data = JSON.parse(readFileSync(box.authFile, 'utf8'))
    delete data.tokens[server.url]
    writeFileSync(box.authFile, JSON.stringify(data))
    const other = await freePort()
    const r = await whoami(options({env: {GW_OAUTH_CALLBACK_PORT: String(other), GW_OAUTH_TIMEOUT: '10'}}))
    expect(r.auth).to.equal('oauth')
    expect(server.stats.registrations).to.equal(2)
    expect(JSON.parse(readFileSync(box.authFile, 'utf8')).clients[server.url].redirect_uri).to.equal(`http://localhost:${other}/callback`)
  })

  it('prefers the port of the stored registration, and moves on when it is busy', async () => {
    const second = await freePort()
    await whoami(options())
    const env = {GW_OAUTH_CALLBACK_PORT: `${Math.min(port, second)}-${Math.max(port, second)}`, GW_OAUTH_TIMEOUT: '10'}
    const drop = (): void => {
      const data = JSON.parse(readFileSync(box.authFile, 'utf8'))
      delete data.tokens[server.url]
      writeFileSync(box.authFile, JSON.stringify(data))
    }
    drop()
    await whoami(options({env}))
    expect(server.stats.registrations, 'same port, same client').to.equal(1)
    drop()
    const blocker = await occupy(port)
    try {
      const visited: string[] = []
      await whoami(options({env, openUrl: browser(visited)}))
      expect(server.stats.registrations).to.equal(2)
      expect(new URL(visited[0]).searchParams.get('redirect_uri')).to.not.equal(`http://localhost:${port}/callback`)
    } finally {
      blocker.close()
    }
  })

  it('callback ports all busy: a clear error naming GW_OAUTH_CALLBACK_PORT', async () => {
    const blocker = await occupy(port)
    try {
      await whoami(options())
      expect.fail('connected')
    } catch (error) {
      expect((error as Error).message).to.match(new RegExp(`port ${port} is in use.*GW_OAUTH_CALLBACK_PORT`))
    } finally {
      blocker.close()
    }
  })

  it('a callback with a foreign state is ignored; the real one completes the login', async () => {
    const r = await whoami(
      options({
        async openUrl(url) {
          await fetch(`http://localhost:${port}/callback?code=forged&state=wrong`).then((res) => res.text())
          await browser()(url)
        },
      }),
    )
    expect(r.auth).to.equal('oauth')
  })

  it('no callback in time: a timeout error, nothing saved', async () => {
    try {
      await whoami(options({env: {GW_OAUTH_CALLBACK_PORT: String(port), GW_OAUTH_TIMEOUT: '0.3'}, openUrl: async () => {}}))
      expect.fail('connected')
    } catch (error) {
      expect((error as Error).message).to.match(/no OAuth callback within/)
      expect((error as {exitCode?: number}).exitCode).to.equal(3)
    }
    const data = JSON.parse(readFileSync(box.authFile, 'utf8'))
    expect(data.tokens).to.deep.equal({})
  })

  it('without a terminal nothing prompts: a clear error says how to provide a token', async () => {
    try {
      await whoami(options({interactive: false, openUrl: async () => expect.fail('browser opened')}))
      expect.fail('connected')
    } catch (error) {
      expect((error as Error).message).to.match(/no terminal.*gw auth login fixture.*--token-stdin/)
      expect((error as {exitCode?: number}).exitCode).to.equal(3)
    }
  })

  it('config header with an unset variable falls back to OAuth; a set one is used as is', async () => {
    const entry = {headers: {Authorization: 'Bearer ${FIXTURE_TOKEN}'}, url: server.url}
    const c = await connectServer('fixture', entry, options({env: {GW_OAUTH_CALLBACK_PORT: String(port), GW_OAUTH_TIMEOUT: '10'}}))
    expect(c.auth).to.equal('oauth')
    await c.close()
    const token = JSON.parse(readFileSync(box.authFile, 'utf8')).tokens[server.url].access_token
    rmSync(box.authFile)
    const d = await connectServer('fixture', entry, options({env: {FIXTURE_TOKEN: token}, openUrl: async () => expect.fail('browser opened')}))
    expect(d.auth).to.equal('config')
    await d.close()
  })

  it('a config header the server rejects is an auth error, not a silent fallback', async () => {
    try {
      await connectServer('fixture', {headers: {Authorization: 'Bearer wrong'}, url: server.url}, options())
      expect.fail('connected')
    } catch (error) {
      expect((error as Error).message).to.match(/rejected the Authorization header from servers.json/)
      expect((error as {exitCode?: number}).exitCode).to.equal(3)
    }
  })
})

describe('gw client: where the protected-resource metadata (RFC 9728) is found', () => {
  for (const prm of ['header-only', 'well-known-only'] as const) {
    it(`${prm === 'header-only' ? 'at the address in WWW-Authenticate' : 'at the well-known address when the 401 names none'}`, async () => {
      const server = await startOAuthMcpServer({prm})
      const box = sandbox()
      try {
        const c = await connectServer('fixture', {url: server.url}, {
          env: {GW_OAUTH_CALLBACK_PORT: String(await freePort()), GW_OAUTH_TIMEOUT: '10'},
          interactive: true,
          log: quiet(),
          openUrl: browser(),
          prompt: async () => expect.fail('prompted'),
          tokenStore: box.store,
        })
        expect(c.auth).to.equal('oauth')
        await c.close()
        if (prm === 'header-only') expect(server.stats.prmHeader).to.be.greaterThan(0)
        else expect([server.stats.prmHeader, server.stats.prmWellKnown > 0]).to.deep.equal([0, true])
      } finally {
        await server.close()
        box.remove()
      }
    })
  }
})

describe('gw client: server that refuses dynamic client registration', () => {
  it('shows the manual prompt with the server refusal as the reason', async () => {
    const server = await startOAuthMcpServer({dcr: 'refuse', staticTokens: ['typed']})
    const box = sandbox()
    try {
      const reasons: string[] = []
      const c = await connectServer('closed', {url: server.url}, {
        env: {GW_OAUTH_CALLBACK_PORT: String(await freePort())},
        interactive: true,
        log: quiet(),
        openUrl: async () => expect.fail('browser opened'),
        async prompt(q) {
          reasons.push(q.hint[0])
          return 'typed'
        },
        tokenStore: box.store,
      })
      expect(c.auth).to.equal('manual')
      await c.close()
      expect(reasons[0]).to.match(/client registration at .*\/register failed: .*registration is closed/)
      expect(JSON.parse(readFileSync(box.authFile, 'utf8')).clients).to.deep.equal({})
    } finally {
      await server.close()
      box.remove()
    }
  })
})

describe('gw client: server without dynamic client registration', () => {
  let server: OAuthMcpFixture
  let box: Sandbox

  beforeEach(async () => {
    server = await startOAuthMcpServer({dcr: false, staticTokens: ['manual-secret']})
    box = sandbox()
  })
  afterEach(async () => {
    await server.close()
    box.remove()
  })

  it('falls back to the manual prompt; the entered token is saved and used later', async () => {
    const questions: Array<{hint: string[]; message: string}> = []
    const port = await freePort()
    const base = {env: {GW_OAUTH_CALLBACK_PORT: String(port)}, interactive: true, log: quiet(), openUrl: async () => expect.fail('browser opened'), tokenStore: box.store}
    const c = await connectServer('nodcr', {url: server.url}, {
      ...base,
      async prompt(q) {
        questions.push(q)
        return 'manual-secret\n'
      },
    })
    expect(c.auth).to.equal('manual')
    await c.close()
    expect(questions).to.have.length(1)
    expect(questions[0].hint.join(' ')).to.match(/does not offer dynamic client registration/)
    expect(questions[0].message).to.equal(`Access token for ${server.url}`)
    const data = JSON.parse(readFileSync(box.authFile, 'utf8'))
    expect(data.tokens[server.url]).to.deep.equal({access_token: 'manual-secret', token_type: 'Bearer'})
    const again = await connectServer('nodcr', {url: server.url}, {...base, prompt: async () => expect.fail('prompted again')})
    expect(again.auth).to.equal('store')
    await again.close()
  })
})
