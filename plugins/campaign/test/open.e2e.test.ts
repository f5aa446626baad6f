import {expect} from 'chai'
import {chmodSync, cpSync, existsSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {basename, join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {runCli, sharedExampleRun, tempDir} from './helpers.js'

/** No display and no browser unless a test gives one. */
const HEADLESS = {BROWSER: '', DISPLAY: '', WAYLAND_DISPLAY: ''}

async function waitFor(file: string): Promise<string> {
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50))
  return readFileSync(file, 'utf8')
}

describe('campaign open', function () {
  this.timeout(120_000)
  let runDir: string

  before(async () => {
    runDir = (await sharedExampleRun()).runDir
  })

  it('opens report.html with $BROWSER, the URL in place of %s', async () => {
    const dir = tempDir()
    const seen = join(dir, 'seen.txt')
    const browser = join(dir, 'fake-browser.sh')
    writeFileSync(browser, `#!/bin/sh\nprintf '%s\\n' "$@" > ${seen}.tmp && mv ${seen}.tmp ${seen}\n`)
    chmodSync(browser, 0o755)
    const res = await runCli(['campaign', 'open', runDir], {env: {...HEADLESS, BROWSER: `${browser} --new-window %s`}})
    expect(res.code, res.stderr).to.equal(0)
    const url = pathToFileURL(join(runDir, 'report.html')).href
    expect(res.stdout.trim()).to.equal(`Opened ${url}`)
    expect((await waitFor(seen)).trim().split('\n')).to.deep.equal(['--new-window', url])
  })

  it('without a display or $BROWSER prints the path and exits 0; --format json gives path and URL', async () => {
    const text = await runCli(['campaign', 'open', runDir], {env: HEADLESS})
    expect(text.code, text.stderr).to.equal(0)
    expect(text.stdout.trim()).to.equal(join(runDir, 'report.html'))
    expect(text.stderr).to.include('no display')
    const json = await runCli(['campaign', 'open', '--workspace', runDir, '--format', 'json'], {env: HEADLESS})
    expect(json.code, json.stderr).to.equal(0)
    expect(JSON.parse(json.stdout)).to.deep.equal({browser: null, opened: false, path: join(runDir, 'report.html'), reason: 'no display and no $BROWSER set', url: pathToFileURL(join(runDir, 'report.html')).href})
  })

  it('a $BROWSER that cannot start still prints the path, exit 0', async () => {
    const res = await runCli(['campaign', 'open', runDir], {env: {...HEADLESS, BROWSER: '/nonexistent/browser'}})
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout.trim()).to.equal(join(runDir, 'report.html'))
    expect(res.stderr).to.include('$BROWSER (/nonexistent/browser) could not start: ENOENT')
  })

  it('without a run directory opens the newest run under out/', async () => {
    const cwd = tempDir()
    const newest = join(cwd, 'out', basename(runDir))
    cpSync(runDir, newest, {recursive: true})
    cpSync(runDir, join(cwd, 'out', '20000101-000000-abcdef'), {recursive: true})
    const res = await runCli(['campaign', 'open', '--format', 'json'], {cwd, env: HEADLESS})
    expect(res.code, res.stderr).to.equal(0)
    expect((JSON.parse(res.stdout) as {path: string}).path).to.equal(join(newest, 'report.html'))
    const empty = await runCli(['campaign', 'open'], {cwd: tempDir(), env: HEADLESS})
    expect(empty.code).to.equal(2)
    expect(empty.stderr).to.include('no run directory in')
  })

  it('a directory that is not a run, or a run without report.html, is named with what to do; exit 2', async () => {
    const notRun = await runCli(['campaign', 'open', tempDir()], {env: HEADLESS})
    expect(notRun.code).to.equal(2)
    expect(notRun.stderr).to.include('is not a run directory (no workspace.json)')
    const missing = await runCli(['campaign', 'open', join(tempDir(), 'nope')], {env: HEADLESS})
    expect(missing.code).to.equal(2)
    expect(missing.stderr).to.include('is not a directory')
    const old = join(tempDir(), basename(runDir))
    cpSync(runDir, old, {recursive: true})
    rmSync(join(old, 'report.html'))
    const res = await runCli(['campaign', 'open', old], {env: HEADLESS})
    expect(res.code).to.equal(2)
    expect(res.stderr).to.include(`has no report.html; write it with \`toolkit campaign export ${old} --skip-url-check\``)
    const both = await runCli(['campaign', 'open', runDir, '--workspace', old], {env: HEADLESS})
    expect(both.code).to.equal(2)
    expect(both.stderr).to.include('not both')
  })
})
