import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {split} from '../src/providers/local/provider.js'
import {copyExample, exampleDir, readEvents, readJson, runCli, runDirIn, runJs, sharedExampleRunCopy, tempDir} from './helpers.js'

describe('campaign generate: pictures, model name and Ctrl-C', function () {
  this.timeout(120_000)

  it('never upscales a photo past what it holds: a picture that cannot be made is reported, and the run is invalid until it is fixed', async () => {
    const {default: sharp} = await import('sharp')
    const dir = copyExample()
    // The Coffee Beans asset groups show AC-001..AC-003: make their photos too small for any ratio.
    for (const id of ['ac-001', 'ac-002', 'ac-003']) await sharp({create: {background: '#6f4e37', channels: 3, height: 200, width: 200}}).jpeg().toFile(join(dir, 'images', `${id}.jpg`))
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', out, '--skip-url-check'])
    expect(res.code).to.equal(3)
    const runDir = runDirIn(out)
    const events = readEvents(runDir)
    const images = events.filter((e) => e.event.type === 'step' && e.event.name === 'images').map((e) => e.event.detail as Record<string, unknown>)
    expect(images[0]).to.include({pictures: 72})
    expect(images[0].sizes).to.deep.equal({landscape: '1200x628', portrait: '960x1200', square: '1200x1200'})
    const failed = images.slice(1).map((d) => d.failed)
    expect(failed).to.include.members(['google-ads/editor/images/acme-coffee-performance-max/coffee-beans-landscape-1.jpg', 'google-ads/editor/images/acme-coffee-demand-gen/coffee-beans-square-3.jpg'])
    expect(String(images[1].reason)).to.contain('200x200 photo cannot give a')
    expect(String(images[1].reason)).to.contain('without upscaling')
    const validation = events.find((e) => e.event.type === 'validation')?.event as unknown as {errors: {code: string}[]}
    expect(validation.errors.map((e) => e.code)).to.include('image_missing')
    expect(readdirSync(join(runDir, 'google-ads', 'editor', 'images', 'acme-coffee-performance-max'))).to.have.length(36)

    // The run holds its own copy of every photo (input/images/): mending those copies is enough.
    const {cpSync} = await import('node:fs')
    for (const id of ['ac-001', 'ac-002', 'ac-003']) cpSync(join(exampleDir, 'images', `${id}.jpg`), join(runDir, 'input', 'images', `${id}.jpg`))
    const again = await runCli(['campaign', 'export', runDir, '--skip-url-check'])
    expect(again.code, again.stderr).to.equal(0)
    expect(readdirSync(join(runDir, 'google-ads', 'editor', 'images', 'acme-coffee-performance-max'))).to.have.length(45)
    const made = readEvents(runDir)
      .slice(events.length)
      .filter((e) => e.event.type === 'artifact_written' && String(e.event.path).includes('/editor/images/'))
      .map((e) => e.event.path)
    // Only the 18 new Coffee Beans pictures (9 per campaign); reused pictures and the unchanged logo are not announced again.
    expect(made).to.have.length(18)
    expect(made.every((p) => /coffee-beans-(landscape|square|portrait)-[123]\.jpg$/.test(String(p)))).to.equal(true)
  })

  it('finds a truncated picture on export and makes it again, atomically', async () => {
    const {default: sharp} = await import('sharp')
    const {runDir} = await sharedExampleRunCopy()
    const rel = 'google-ads/editor/images/acme-coffee-performance-max/accessories-square-1.jpg'
    const file = join(runDir, rel)
    const whole = readFileSync(file)
    writeFileSync(file, whole.subarray(0, Math.floor(whole.length / 2)))
    const before = readEvents(runDir).length
    const res = await runCli(['campaign', 'export', runDir, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const after = readEvents(runDir).slice(before)
    const regenerated = after.filter((e) => e.event.type === 'step' && e.event.name === 'images' && (e.event.detail as {regenerated?: string}).regenerated)
    expect(regenerated.map((e) => (e.event.detail as {regenerated: string}).regenerated)).to.deep.equal([rel])
    expect(after.filter((e) => e.event.type === 'artifact_written' && String(e.event.path).endsWith('.jpg')).map((e) => e.event.path)).to.deep.equal([rel])
    const stats = await sharp(file, {failOn: 'truncated'}).stats()
    expect(stats.channels).to.have.length(3)
    expect(readdirSync(join(runDir, 'google-ads', 'editor', 'images', 'acme-coffee-performance-max')).filter((f) => f.includes('.tmp'))).to.deep.equal([])
  })

  it('finds a truncated or corrupt picture on generate --resume and makes it again, atomically', async () => {
    const {default: sharp} = await import('sharp')
    const {runDir} = await sharedExampleRunCopy()
    const truncated = 'google-ads/editor/images/acme-coffee-performance-max/accessories-square-1.jpg'
    const corrupt = 'google-ads/editor/images/acme-coffee-demand-gen/coffee-beans-landscape-2.jpg'
    const whole = readFileSync(join(runDir, truncated))
    writeFileSync(join(runDir, truncated), whole.subarray(0, Math.floor(whole.length / 2)))
    // A JPEG header and then noise: the right name and size, not a picture.
    writeFileSync(join(runDir, corrupt), Buffer.concat([whole.subarray(0, 64), Buffer.alloc(whole.length, 0x5a)]))
    const before = readEvents(runDir).length
    const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const after = readEvents(runDir).slice(before)
    const regenerated = after.filter((e) => e.event.type === 'step' && e.event.name === 'images' && (e.event.detail as {regenerated?: string}).regenerated)
    expect(regenerated.map((e) => (e.event.detail as {regenerated: string}).regenerated).sort()).to.deep.equal([corrupt, truncated].sort())
    expect(after.filter((e) => e.event.type === 'artifact_written' && String(e.event.path).endsWith('.jpg')).map((e) => e.event.path).sort()).to.deep.equal([corrupt, truncated].sort())
    for (const rel of [truncated, corrupt]) {
      const stats = await sharp(join(runDir, rel), {failOn: 'truncated'}).stats()
      expect(stats.channels, rel).to.have.length(3)
    }
    for (const folder of ['acme-coffee-performance-max', 'acme-coffee-demand-gen']) {
      expect(readdirSync(join(runDir, 'google-ads', 'editor', 'images', folder)).filter((f) => f.includes('.tmp'))).to.deep.equal([])
    }
  })

  it('records --model in run.json and run_started', async () => {
    const out = tempDir()
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('formats = ["search", "performance_max", "demand_gen"]', 'formats = ["search"]'))
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check', '--model', 'planner-v1'])
    expect(res.code, res.stderr).to.equal(0)
    const runDir = runDirIn(out)
    expect(readJson(join(runDir, 'run.json'))).to.deep.include({model: 'planner-v1', provider: 'local'})
    expect(readEvents(runDir)[0].event).to.deep.include({model: 'planner-v1'})
    // rule 2: no image campaign, no editor/ folder
    expect(existsSync(join(runDir, 'google-ads', 'editor'))).to.equal(false)
    expect(readdirSync(join(runDir, 'google-ads')).sort()).to.deep.equal(['1-campaign.csv', '2-ad-groups.csv', '3-keywords.csv', '4-negative-keywords.csv', '5-responsive-search-ads.csv'])
  })

  it('[campaigns] search_bid_strategy sets the Search campaigns\' bid strategy', async () => {
    const out = tempDir()
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('formats = ["search", "performance_max", "demand_gen"]', 'formats = ["search"]\nsearch_bid_strategy = "maximize_clicks"'))
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const rows = readFileSync(join(runDirIn(out), 'google-ads', '1-campaign.csv'), 'utf8').trim().split('\r\n').filter((r) => r.startsWith('Campaign,'))
    expect(rows.length).to.equal(7)
    for (const row of rows) expect(row.split(',')[8]).to.equal('Maximize clicks')
  })

  it('rule 1: an account without Search campaigns writes none of the five CSVs', async () => {
    const out = tempDir()
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('formats = ["search", "performance_max", "demand_gen"]', 'formats = ["performance_max"]'))
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const runDir = runDirIn(out)
    expect(readdirSync(join(runDir, 'google-ads'))).to.deep.equal(['editor'])
    expect(existsSync(join(runDir, 'google-ads', 'editor', 'image-campaigns.csv'))).to.equal(true)
  })

  it('Ctrl-C ends the run as incomplete (exit 1), counts every unfinished mission, and --resume completes it', async () => {
    const out = tempDir()
    const child = spawn(process.execPath, [runJs, 'campaign', 'generate', join(copyExample(), 'business.toml'), '--out', out, '--skip-url-check', '--parallel', '1'], {
      env: {...process.env, HOME: tempDir(), NO_COLOR: '1', TOOLKIT_CAMPAIGN_LOCAL_DELAY_MS: '40'},
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const exited = new Promise<null | number>((resolve) => child.on('exit', (code) => resolve(code)))
    // Wait until the plan is done and the first campaign mission runs: the others are still pending.
    for (let i = 0; i < 1500; i++) {
      await sleep(10)
      const dirs = existsSync(out) ? readdirSync(out) : []
      if (dirs.length > 0 && existsSync(join(out, dirs[0], 'events.ndjson')) && readFileSync(join(out, dirs[0], 'events.ndjson'), 'utf8').includes('"mission":"campaign:')) break
    }
    child.kill('SIGINT')
    expect(await exited).to.equal(1)
    const runDir = runDirIn(out)
    const ws = readJson<{missions: Record<string, {status: unknown}>}>(join(runDir, 'workspace.json'))
    const all = Object.keys(ws.missions).length
    const unfinished = Object.values(ws.missions).filter((m) => m.status !== 'finished')
    expect(unfinished.filter((m) => m.status === 'pending').length, 'pending missions').to.be.greaterThan(0)
    const run = readJson<{totals: {failed_missions: number; missions: number}}>(join(runDir, 'run.json'))
    expect(run).to.deep.include({exit_code: 1, status: 'incomplete'})
    expect(run.totals).to.deep.include({failed_missions: unfinished.length, missions: all})
    expect(stderr).to.contain(`run incomplete: ${unfinished.length} of ${all} missions did not finish`)
    const report = readFileSync(join(runDir, 'report.md'), 'utf8')
    expect(report).to.contain('**Status: INCOMPLETE** (exit 1)')
    expect(report).to.contain('pending (did not finish; --resume runs it)')
    const events = readEvents(runDir)
    expect(events.at(-1)?.event).to.deep.include({exit_code: 1, ok: false, type: 'run_finished'})
    expect(events.some((e) => e.event.type === 'mission_finished' && e.event.reason === 'interrupted')).to.equal(true)

    // The cause (the interruption) is gone: --resume completes the same run.
    const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    expect(readJson(join(runDir, 'run.json'))).to.deep.include({exit_code: 0, status: 'success'})
  })

  it('a reader that closes stdout early (| head) does not cut the run short', async () => {
    const out = tempDir()
    const child = spawn(process.execPath, [runJs, 'campaign', 'generate', join(copyExample(), 'business.toml'), '--out', out, '--skip-url-check', '--format', 'json'], {
      env: {...process.env, HOME: tempDir(), NO_COLOR: '1'},
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    const exited = new Promise<null | number>((resolve) => child.on('exit', (code) => resolve(code)))
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()))
    child.stdout.destroy()
    expect(await exited).to.equal(0)
    const runDir = runDirIn(out)
    expect(readEvents(runDir).at(-1)?.event).to.deep.include({exit_code: 0, type: 'run_finished'})
    expect(readJson(join(runDir, 'run.json'))).to.deep.include({status: 'success'})
  })

  it('plans from the pages when there is no catalog', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('[catalog]\nfile = "catalog.csv"\n', ''))
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const ws = readJson<{account: {campaigns: {name: string; type: string}[]}; input: {catalog: unknown[]}}>(join(runDirIn(out), 'workspace.json'))
    expect(ws.input.catalog).to.deep.equal([])
    const names = ws.account.campaigns.map((c) => c.name)
    expect(names).to.include.members(['Acme Coffee - Brand', 'Acme Coffee - Coffee Beans', 'Acme Coffee - Tea'])
    // No product photos: no picture could show what is sold, so no image campaign, and the report says why.
    expect(names.some((n) => /Performance Max|Demand Gen/.test(n))).to.equal(false)
    expect(readFileSync(join(runDirIn(out), 'report.md'), 'utf8')).to.contain('No Performance Max campaign although `[campaigns] formats` asks for one')
  })

  it('merges categories that differ only in case and keeps campaign slugs distinct', async () => {
    const dir = copyExample()
    const catalog = join(dir, 'catalog.csv')
    const text = readFileSync(catalog, 'utf8').replace(',Tea,', ',tea,').replaceAll(',Accessories,', ',Brand,')
    writeFileSync(catalog, text)
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const ws = readJson<{account: {campaigns: {name: string; slug: string}[]}}>(join(runDirIn(out), 'workspace.json'))
    const slugs = ws.account.campaigns.map((c) => c.slug)
    expect(new Set(slugs).size).to.equal(slugs.length)
    expect(slugs).to.include.members(['acme-coffee-brand', 'acme-coffee-brand-2'])
  })
})

describe('budget split', () => {
  it('adds up to the budget in whole cents, even when tiny', () => {
    for (const [total, weights] of [
      [12_000, [0.1, 0.2, 0.3, 0.4]],
      [1001, [1, 1, 1]],
      [5, [0.5, 0.1, 0.1, 0.1, 0.1, 0.1]],
      [3, [1, 1, 1, 1]],
    ] as [number, number[]][]) {
      const parts = split(total, weights)
      expect(parts).to.have.length(weights.length)
      if (total >= weights.length) {
        expect(parts.reduce((a, b) => a + b, 0), `${total}`).to.equal(total)
        expect(Math.min(...parts)).to.be.at.least(1)
      }
    }
    expect(split(1001, [1, 1, 1])).to.deep.equal([334, 334, 333])
  })
})

describe('campaign generate: configuration', function () {
  this.timeout(60_000)

  it('reads campaign.json and TOOLKIT_CAMPAIGN_* under the flags', async () => {
    const configDir = tempDir()
    writeFileSync(join(configDir, 'campaign.json'), '{\n  // where runs go\n  "out": "ignored-by-env",\n  "model": "from-file"\n}\n')
    const out = tempDir()
    const file = join(copyExample(), 'business.toml')
    const res = await runCli(['campaign', 'generate', file, '--skip-url-check'], {env: {TOOLKIT_CAMPAIGN_OUT: out, TOOLKIT_CONFIG_DIR: configDir}})
    expect(res.code, res.stderr).to.equal(0)
    expect(readJson(join(runDirIn(out), 'run.json'))).to.deep.include({model: 'from-file'})
    const flag = await runCli(['campaign', 'generate', file, '--skip-url-check', '--provider', 'nope'], {env: {TOOLKIT_CAMPAIGN_PROVIDER: 'local', TOOLKIT_CONFIG_DIR: configDir}})
    expect(flag.code).to.equal(2)
    expect(flag.stderr).to.contain('unknown provider "nope"')
    writeFileSync(join(configDir, 'campaign.json'), '{"parallel": 0}')
    const bad = await runCli(['campaign', 'generate', file], {env: {TOOLKIT_CONFIG_DIR: configDir}})
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.contain('parallel must be a whole number of at least 1, got 0')
  })
})
