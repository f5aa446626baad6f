import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {mkdtempSync, readdirSync, readFileSync, rmSync, statSync} from 'node:fs'
import {homedir, tmpdir} from 'node:os'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {freshHome, jsonLines, repoRoot, runCli} from './helpers/cli.js'
import {ourPlugins, strippedToolkit} from './helpers/stripped-toolkit.js'
import {scratchDir} from './helpers/scratch.js'

const topics = ['gw', 'svc', 'campaign']

describe('plugins', () => {
  describe('toolkit without its topic plugins', () => {
    for (const plugin of ourPlugins) {
      it(`still runs without ${plugin}`, async () => {
        const bin = strippedToolkit([plugin])
        const topic = plugin.replace('@toolkit/plugin-', '')
        const help = await runCli(['--help'], {bin, env: freshHome().env})
        expect(help.code).to.equal(0)
        expect(help.stdout).not.to.match(new RegExp(`^  ${topic} `, 'm'))
        for (const other of topics.filter((t) => t !== topic)) expect(help.stdout).to.match(new RegExp(`^  ${other} `, 'm'))
        const missing = await runCli([topic, '--help'], {bin, env: freshHome().env})
        expect(missing.code).to.equal(2)
      })
    }
  })

  describe('each topic plugin installed on its own from its npm tarball', () => {
    let bin: string
    let tarballs: string[]
    const home = freshHome()
    // Reuse the machine's npm cache so installing the plugins' dependencies needs no download.
    const npmEnv: Record<string, string> = {...home.env, npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm'), npm_config_prefer_offline: 'true'}

    let prebuilds = ''
    after(() => rmSync(prebuilds, {force: true, recursive: true}))

    before(function () {
      this.timeout(120_000)
      bin = strippedToolkit()
      // better-sqlite3's prebuilt binaries come from GitHub, which this machine cannot reach, so
      // each install would compile SQLite again (a minute of CPU). The copy `npm ci` built is
      // handed to prebuild-install as a local prebuild instead, the way it serves offline installs.
      const sqlite = dirname(createRequire(join(repoRoot, 'plugins', 'svc', 'package.json')).resolve('better-sqlite3/package.json'))
      const {version} = JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as {version: string}
      prebuilds = mkdtempSync(join(tmpdir(), 'toolkit-prebuilds-'))
      const archive = join(prebuilds, `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`)
      execFileSync('tar', ['-czf', archive, '-C', sqlite, 'build/Release/better_sqlite3.node'])
      npmEnv.npm_config_better_sqlite3_local_prebuilds = prebuilds
      const dest = scratchDir('toolkit-packs-')
      for (const plugin of ourPlugins) {
        // The plugins were built by `npm run build`; --ignore-scripts packs that build as it is.
        execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dest, '-w', plugin], {cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit']})
      }
      tarballs = readdirSync(dest).map((f) => join(dest, f))
      expect(tarballs).to.have.length(3)
    })

    it('installs each tarball into a toolkit that lacks it, in a fresh HOME, and runs its commands', async function () {
      this.timeout(300_000)
      const before = await runCli(['--help'], {bin, env: npmEnv})
      for (const t of topics) expect(before.stdout).not.to.match(new RegExp(`^  ${t} `, 'm'))
      for (const tarball of tarballs) {
        const r = await runCli(['plugins', 'install', `file:${tarball}`], {bin, env: npmEnv, timeoutMs: 240_000})
        expect(r.code, r.stderr).to.equal(0)
      }
      const list = await runCli(['plugins', '--json'], {bin, env: npmEnv})
      const installed = (JSON.parse(list.stdout) as Array<{name: string; type: string}>).filter((p) => p.type === 'user').map((p) => p.name)
      expect(installed).to.have.members(ourPlugins)
      for (const t of topics) {
        const r = await runCli([t, '--help'], {bin, env: npmEnv})
        expect(r.code, r.stderr).to.equal(0)
        expect(r.stdout).to.include(`toolkit ${t} `)
      }
      // svc's native SQLite binding loads from the installed tree.
      const sqlite = execFileSync(process.execPath, ['-e', "const D = require('better-sqlite3'); process.stdout.write(new D(':memory:').prepare('select sqlite_version() as v').get().v)"], {cwd: join(home.dir, '.local', 'share', 'toolkit'), encoding: 'utf8'})
      expect(sqlite).to.match(/^3\.\d+\.\d+$/)
    })
  })

  describe('a third-party plugin using the shared hooks (test/fixtures/example-plugin)', () => {
    // oclif warns that a linked ESM plugin "cannot be auto-transpiled"; this one is plain JavaScript.
    const home = {env: {...freshHome().env, OCLIF_DISABLE_LINKED_ESM_WARNING: '1'}}
    const fixture = join(repoRoot, 'test', 'fixtures', 'example-plugin')

    before(async () => {
      const r = await runCli(['plugins', 'link', fixture, '--no-install'], {env: home.env})
      expect(r.code, r.stderr).to.equal(0)
    })

    it('gets its settings from the config hook: defaults < files < environment < flags', async () => {
      const plain = await runCli(['hello', 'greet', 'Ada', '--format', 'json'], {env: home.env})
      expect(plain.code, plain.stderr).to.equal(0)
      expect(jsonLines(plain.stdout)).to.deep.equal([{message: 'Hello, Ada!', source: 'default'}])
      expect(plain.stderr).to.include('greeting someone')
      const fromEnv = await runCli(['hello', 'greet', 'Ada', '--format', 'json'], {env: {...home.env, TOOLKIT_HELLO_GREETING: 'Hi'}})
      expect(jsonLines(fromEnv.stdout)[0]).to.deep.equal({message: 'Hi, Ada!', source: 'env:TOOLKIT_HELLO_GREETING'})
      const fromFlag = await runCli(['hello', 'greet', 'Ada', '--greeting', 'Hey', '--format', 'json'], {env: {...home.env, TOOLKIT_HELLO_GREETING: 'Hi'}})
      expect(jsonLines(fromFlag.stdout)[0]).to.deep.equal({message: 'Hey, Ada!', source: 'flag'})
      const text = await runCli(['hello', 'greet', 'Ada'], {env: home.env})
      expect(text.stdout).to.equal('Hello, Ada!\n')
    })

    it('gets a malformed-config error with file and line through the hook', async () => {
      const dir = scratchDir('toolkit-cfg-')
      const {writeFileSync} = await import('node:fs')
      writeFileSync(join(dir, 'hello.json'), '{\n  "greeting": 3\n}\n')
      const r = await runCli(['hello', 'greet', 'Ada'], {env: {...home.env, TOOLKIT_CONFIG_DIR: dir}})
      expect(r.code).to.equal(2)
      expect(r.stderr).to.equal(`Error: ${join(dir, 'hello.json')}:2:15: "greeting" must be a string, not number\n`)
    })

    it('saves a credential through the token-store hook without printing it', async () => {
      const dir = scratchDir('toolkit-cfg-')
      const env = {...home.env, TOOLKIT_CONFIG_DIR: dir}
      const r = await runCli(['hello', 'remember', 'https://api.example.com', '--token', 's3cr3t-value', '--format', 'json'], {env})
      expect(r.code, r.stderr).to.equal(0)
      expect(jsonLines(r.stdout)).to.deep.equal([{saved: true, url: 'https://api.example.com'}])
      expect(r.stdout + r.stderr).not.to.include('s3cr3t-value')
      const file = join(dir, 'hello-auth.json')
      expect(statSync(file).mode & 0o777).to.equal(0o600)
      expect(JSON.parse(readFileSync(file, 'utf8')).tokens['https://api.example.com'].access_token).to.equal('s3cr3t-value')
    })
  })
})
