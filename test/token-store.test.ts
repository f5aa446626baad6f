import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {readdirSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {createTokenStore} from '../src/lib/token-store.js'
import {repoRoot} from './helpers/cli.js'
import {scratchDir} from './helpers/scratch.js'

const tmp = () => scratchDir('toolkit-tokens-')

describe('token store hook', () => {
  it('writes the gw auth.json shape with mode 0600 and no temporary files left', async () => {
    const dir = tmp()
    const file = join(dir, 'gw', 'auth.json')
    const store = createTokenStore(file)
    await store.setClient('https://mcp.example.com/mcp', {client_id: 'abc'})
    await store.setToken('https://mcp.example.com/mcp', {access_token: 't1', expires_at: 1_900_000_000, refresh_token: 'r1'})
    expect(JSON.parse(readFileSync(file, 'utf8'))).to.deep.equal({
      clients: {'https://mcp.example.com/mcp': {client_id: 'abc'}},
      tokens: {'https://mcp.example.com/mcp': {access_token: 't1', expires_at: 1_900_000_000, refresh_token: 'r1'}},
    })
    expect(statSync(file).mode & 0o777).to.equal(0o600)
    expect(readdirSync(join(dir, 'gw'))).to.deep.equal(['auth.json'])
  })

  it('forgets a token or a whole entry on remove, and keeps unknown keys', async () => {
    const file = join(tmp(), 'auth.json')
    writeFileSync(file, JSON.stringify({clients: {u: {client_id: 'c'}}, other: 1, tokens: {u: {access_token: 'x'}}}))
    const store = createTokenStore(file)
    await store.remove('u', 'token')
    expect(await store.get('u')).to.deep.equal({client: {client_id: 'c'}, token: undefined})
    await store.remove('u')
    expect(await store.read()).to.deep.equal({clients: {}, other: 1, tokens: {}})
  })

  it('says how to recover from a corrupt file instead of overwriting it', async () => {
    const file = join(tmp(), 'auth.json')
    writeFileSync(file, '{"tokens": ')
    const store = createTokenStore(file)
    let error: Error | undefined
    try {
      await store.setToken('u', {access_token: 'x'})
    } catch (e) {
      error = e as Error
    }
    expect(error?.message).to.match(/not valid JSON.*delete it/)
    expect(readFileSync(file, 'utf8')).to.equal('{"tokens": ')
  })

  it('keeps every write when two processes save tokens at the same time', async () => {
    const file = join(tmp(), 'auth.json')
    const writer = (who: string) =>
      new Promise<number | null>((resolve) => {
        const script = `import {createTokenStore} from ${JSON.stringify(join(repoRoot, 'dist/lib/token-store.js'))}
          const s = createTokenStore(${JSON.stringify(file)})
          for (let i = 0; i < 25; i++) await s.setToken('https://${who}.example/' + i, {access_token: '${who}' + i})`
        spawn(process.execPath, ['--input-type=module', '-e', script], {stdio: 'inherit'}).on('close', resolve)
      })
    expect(await Promise.all([writer('a'), writer('b')])).to.deep.equal([0, 0])
    const data = JSON.parse(readFileSync(file, 'utf8'))
    expect(Object.keys(data.tokens)).to.have.length(50)
    expect(statSync(file).mode & 0o777).to.equal(0o600)
  })

  it('runs work on one entry in one process at a time across processes (exclusive), and still lets it save', async () => {
    const dir = tmp()
    const file = join(dir, 'auth.json')
    const trace = join(dir, 'trace.log')
    const worker = (who: string) =>
      new Promise<number | null>((resolve) => {
        const script = `import {createTokenStore} from ${JSON.stringify(join(repoRoot, 'dist/lib/token-store.js'))}
          import {appendFileSync} from 'node:fs'
          const s = createTokenStore(${JSON.stringify(file)})
          for (let i = 0; i < 5; i++) await s.exclusive('https://one.example/mcp', async () => {
            appendFileSync(${JSON.stringify(trace)}, '${who}+')
            await new Promise((r) => setTimeout(r, 30))
            await s.setToken('https://one.example/mcp', {access_token: '${who}' + i})
            appendFileSync(${JSON.stringify(trace)}, '${who}-')
          })`
        spawn(process.execPath, ['--input-type=module', '-e', script], {stdio: 'inherit'}).on('close', resolve)
      })
    expect(await Promise.all([worker('a'), worker('b'), worker('c')])).to.deep.equal([0, 0, 0])
    // Every start is followed by its own end: no two holders overlapped.
    expect(readFileSync(trace, 'utf8')).to.match(/^(?:([abc])\+\1-){15}$/)
    expect(readdirSync(dir).filter((f) => f.endsWith('.lock'))).to.deep.equal([])
  })
})
