import {expect} from 'chai'
import {spawn, spawnSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {startOAuthMcpServer, type OAuthMcpFixture} from '../fixtures/oauth-mcp-server.mjs'
import {RUN} from './cli.js'
import {freePort} from './helpers.js'

const hasScript = spawnSync('script', ['--version']).status === 0

/**
 * Runs the CLI inside a pseudo-terminal (util-linux `script`), so stdin and stderr are TTYs and
 * the real inquirer prompt is shown; `answer` is typed once the prompt appears.
 */
function inTerminal(args: string[], env: Record<string, string>, cwd: string, prompt: RegExp, answer: string): Promise<{code: null | number; screen: string}> {
  return new Promise((resolve, reject) => {
    const command = [process.execPath, RUN, ...args].map((a) => `'${a.replaceAll("'", String.raw`'\''`)}'`).join(' ')
    const child = spawn('script', ['-qefc', command, '/dev/null'], {cwd, env: {...env, PATH: process.env.PATH ?? '', TERM: 'dumb'}, stdio: ['pipe', 'pipe', 'pipe']})
    let screen = ''
    let typed = false
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`no exit; screen:\n${screen}`))
    }, 30_000)
    child.stdout.on('data', (d: Buffer) => {
      screen += d.toString()
      if (!typed && prompt.test(screen)) {
        typed = true
        child.stdin.write(`${answer}\r`)
      }
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      child.stdin.destroy()
      resolve({code, screen})
    })
  })
}

describe('gw client: the manual token prompt in a real terminal', function () {
  this.timeout(60_000)
  let server: OAuthMcpFixture
  let dir: string

  before(function () {
    if (!hasScript) this.skip()
  })
  beforeEach(async () => {
    server = await startOAuthMcpServer({dcr: false, staticTokens: ['typed-secret-123']})
    dir = mkdtempSync(join(tmpdir(), 'gw-pty-'))
    mkdirSync(join(dir, 'home'))
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({gwServers: {nodcr: {url: server.url}}}))
  })
  afterEach(async () => {
    await server.close()
    rmSync(dir, {force: true, recursive: true})
  })

  it('server without dynamic registration: masked prompt, token saved, then used without asking', async () => {
    const home = join(dir, 'home')
    const env = {GW_OAUTH_CALLBACK_PORT: String(await freePort()), HOME: home, NO_COLOR: '1', XDG_CONFIG_HOME: join(home, '.config')}
    const first = await inTerminal(['gw', 'call', 'nodcr', 'whoami'], env, dir, /Access token for/, 'typed-secret-123')
    expect(first.code, first.screen).to.equal(0)
    expect(first.screen).to.include('does not offer dynamic client registration')
    expect(first.screen).to.include('client static')
    expect(first.screen, 'input is masked').to.not.include('typed-secret-123')
    const saved = JSON.parse(readFileSync(join(home, '.config', 'toolkit', 'gw-auth.json'), 'utf8'))
    expect(saved.tokens[server.url]).to.deep.equal({access_token: 'typed-secret-123', token_type: 'Bearer'})
    const second = await inTerminal(['gw', 'call', 'nodcr', 'whoami'], env, dir, /Access token for/, 'should-not-be-asked')
    expect(second.code, second.screen).to.equal(0)
    expect(second.screen).to.not.include('Access token for')
  })
})
