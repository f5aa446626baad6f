import {expect} from 'chai'
import {type ChildProcess, spawn} from 'node:child_process'
import {once} from 'node:events'
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {freshHome, jsonLines, runCli, runJs} from './helpers/cli.js'

/** A project directory with svc's config.edn and gw's servers.json, and its own HOME. */
function project(): {dir: string; env: Record<string, string>} {
  const home = freshHome()
  const dir = join(home.dir, 'project')
  mkdirSync(dir)
  writeFileSync(join(dir, 'config.edn'), '{:servers {:rest {:port 0}\n           :redis {:host "127.0.0.2"}}\n :logging {:level :warn}}\n')
  writeFileSync(join(dir, 'servers.json'), '{\n  "gwServers": {},\n  "serve": {\n    "port": 0,\n    "sessionIdle": 60\n  }\n}\n')
  return {dir, env: {...home.env, TOOLKIT_CONFIG_DIR: join(home.dir, 'cfg')}}
}

/** Starts a long-running command and resolves with its first stdout record. */
async function firstRecord(args: string[], cwd: string, env: Record<string, string>): Promise<{child: ChildProcess; record: Record<string, unknown>}> {
  const child = spawn(process.execPath, [runJs, ...args, '--format', 'json'], {cwd, env: {...process.env, ...env}, stdio: ['ignore', 'pipe', 'pipe']})
  let out = ''
  let err = ''
  child.stderr!.on('data', (d) => (err += d))
  const record = await new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]) as Record<string, unknown>)
    })
    child.once('exit', (code) => reject(new Error(`exited ${code} before a record: ${err}`)))
  })
  return {child, record}
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode
  child.kill('SIGTERM')
  const [code] = await once(child, 'exit')
  return code as number | null
}

describe('plugin settings through the shared config hook (built CLI)', () => {
  it('config show explains every svc and gw value: default, its own file with the line, env, and toolkit config files', async () => {
    const {dir, env} = project()
    mkdirSync(env.TOOLKIT_CONFIG_DIR)
    writeFileSync(join(env.TOOLKIT_CONFIG_DIR, 'config.json'), '{"svc": {"committerName": "ops"}}\n')
    const r = await runCli(['config', 'show', '--format', 'json'], {cwd: dir, env: {...env, TOOLKIT_SVC_REDIS_PORT: '7001', TOOLKIT_GW_HOST: '127.0.0.3'}})
    expect(r.code, r.stderr).to.equal(0)
    const records = jsonLines(r.stdout)
    const find = (section: string, key: string) => records.find((x) => x.section === section && x.key === key)
    expect(find('svc', 'restPort')).to.deep.equal({key: 'restPort', section: 'svc', source: `file:${join(dir, 'config.edn')}:1`, value: 0})
    expect(find('svc', 'redisHost')).to.deep.include({source: `file:${join(dir, 'config.edn')}:2`, value: '127.0.0.2'})
    expect(find('svc', 'logLevel')).to.deep.include({source: `file:${join(dir, 'config.edn')}:3`, value: 'warn'})
    expect(find('svc', 'redisPort')).to.deep.include({source: 'env:TOOLKIT_SVC_REDIS_PORT', value: 7001})
    expect(find('svc', 'committerName')).to.deep.include({source: `file:${join(env.TOOLKIT_CONFIG_DIR, 'config.json')}:1`, value: 'ops'})
    expect(find('svc', 'postgresqlPort')).to.deep.include({source: 'default', value: 5432})
    expect(find('gw', 'port')).to.deep.include({source: `file:${join(dir, 'servers.json')}:4`, value: 0})
    expect(find('gw', 'host')).to.deep.include({source: 'env:TOOLKIT_GW_HOST', value: '127.0.0.3'})
    expect(find('campaign', 'provider')).to.deep.include({source: 'default', value: 'local'})
    expect(records.some((x) => x.key === 'password'), 'the PostgreSQL password is never shown').to.equal(false)
    const only = await runCli(['config', 'show', 'gw', '--format', 'json'], {cwd: dir, env})
    expect(new Set(jsonLines(only.stdout).map((x) => x.section))).to.deep.equal(new Set(['gw']))
  })

  it('svc server takes config.edn, TOOLKIT_SVC_* and flags from the same layers', async () => {
    const {dir, env} = project()
    const {child, record} = await firstRecord(['svc', 'server', '--data-dir', join(dir, 'data'), '--disable-sql'], dir, {...env, TOOLKIT_SVC_REDIS_ENABLED: 'false'})
    try {
      expect(record).to.include({status: 'listening'})
      expect(record.rest).to.be.a('number').and.not.equal(0)
      expect(record).not.to.have.property('redis')
      expect(record).not.to.have.property('pg')
    } finally {
      expect(await stop(child)).to.equal(0)
    }
  })

  it('gw serve takes the "serve" object of servers.json and TOOLKIT_GW_*', async () => {
    const {dir, env} = project()
    const {child, record} = await firstRecord(['gw', 'serve', '--http'], dir, {...env, TOOLKIT_GW_HOST: '127.0.0.1'})
    try {
      expect(record).to.include({event: 'listening'})
      expect(String(record.url)).to.match(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      expect(String(record.url)).not.to.include(':8080/')
    } finally {
      await stop(child)
    }
  })

  it('a bad value is refused naming where it came from, exit 2', async () => {
    const {dir, env} = project()
    const port = await runCli(['svc', 'server', '--format', 'json'], {cwd: dir, env: {...env, TOOLKIT_SVC_REST_PORT: '70000'}})
    expect(port.code).to.equal(2)
    expect(port.stderr).to.include('env:TOOLKIT_SVC_REST_PORT: restPort must be a port number (0-65535), got 70000')
    writeFileSync(join(dir, 'servers.json'), '{\n  "serve": {\n    "prot": 1\n  }\n}\n')
    const key = await runCli(['gw', 'serve', '--http'], {cwd: dir, env})
    expect(key.code).to.equal(2)
    expect(key.stderr).to.include(`${join(dir, 'servers.json')}:3: unknown key "serve.prot"`)
  })
})
