import {expect} from 'chai'
import {cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {copyExample, exampleDir, goldenDir, type Line, readEvents, readJson, runCli, runDirIn, tempDir} from './helpers.js'

const SEARCH = ['1-campaign.csv', '2-ad-groups.csv', '3-keywords.csv', '4-negative-keywords.csv', '5-responsive-search-ads.csv']
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

function expectGolden(runDir: string): void {
  for (const f of SEARCH) {
    const got = readFileSync(join(runDir, 'google-ads', f))
    expect(got.toString('utf8'), f).to.equal(readFileSync(join(goldenDir, f), 'utf8'))
  }
  const editor = readFileSync(join(runDir, 'google-ads', 'editor', 'image-campaigns.csv'))
  expect([...editor.subarray(0, 2)], 'UTF-16LE byte-order mark').to.deep.equal([0xff, 0xfe])
  expect(editor.subarray(2).toString('utf16le')).to.equal(readFileSync(join(goldenDir, 'image-campaigns.tsv'), 'utf8'))
}

function csvFiles(runDir: string): string[] {
  const dir = join(runDir, 'google-ads')
  if (!existsSync(dir)) return []
  return (readdirSync(dir, {recursive: true}) as string[]).filter((f) => f.endsWith('.csv'))
}

describe('campaign generate on the example (end to end)', function () {
  this.timeout(120_000)
  let out: string
  let runDir: string
  let stdout: string
  let events: Line[]

  before(async () => {
    out = tempDir()
    const res = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--format', 'json'])
    expect(res.code, res.stderr).to.equal(0)
    stdout = res.stdout
    runDir = runDirIn(out)
    events = readEvents(runDir)
  })

  it('names the run directory <YYYYMMDD-HHMMSS>-<6 hex> in UTC', () => {
    const name = runDir.split('/').pop() as string
    expect(name).to.match(/^\d{8}-\d{6}-[0-9a-f]{6}$/)
    const ts = new Date(events[0].ts)
    const stamp = `${ts.getUTCFullYear()}${String(ts.getUTCMonth() + 1).padStart(2, '0')}${String(ts.getUTCDate()).padStart(2, '0')}`
    expect(name.slice(0, 8)).to.equal(stamp)
  })

  it('writes exactly the documented layout', () => {
    for (const f of ['run.json', 'workspace.json', 'events.ndjson', 'report.md', 'input/business.toml', 'input/catalog.csv', 'input/logo.png', 'google-ads/editor/images/logo.png']) {
      expect(existsSync(join(runDir, f)), f).to.equal(true)
    }
    expect(readdirSync(runDir).filter((f) => f.endsWith('.tmp')), 'temporary files left behind').to.deep.equal([])
    expect(readFileSync(join(runDir, 'input/business.toml'))).to.deep.equal(readFileSync(join(exampleDir, 'business.toml')))
  })

  it('matches the golden Google Ads files (UTF-8 CSV with CRLF, Editor UTF-16LE with BOM)', () => {
    expectGolden(runDir)
    const campaigns = readFileSync(join(runDir, 'google-ads', '1-campaign.csv'))
    expect([...campaigns.subarray(0, 3)]).to.not.deep.equal([0xef, 0xbb, 0xbf])
    expect(campaigns.toString('utf8').split('\r\n')[0]).to.equal(
      'Row Type,Action,Campaign status,Campaign,Campaign type,Networks,Budget,Budget type,Bid strategy type,Language,Location,Final URL suffix,EU political ads',
    )
    expect(campaigns.toString('utf8').replaceAll('\r\n', '')).to.not.contain('\n')
  })

  it('cross-negatives send the brand-named product search to the campaign that sells it', () => {
    const negatives = readFileSync(join(runDir, 'google-ads', '4-negative-keywords.csv'), 'utf8')
    expect(negatives).to.contain('Negative keyword,Add,Enabled,Campaign,Acme Coffee - Brand,,acme coffee travel mug,Phrase match\r\n')
    expect(events.find((e) => e.event.type === 'step' && e.event.name === 'cross-negatives')?.event.detail).to.deep.equal({added: 1, campaigns: 5})
  })

  it('rule 1: the five CSVs hold Search campaigns only', () => {
    const text = readFileSync(join(runDir, 'google-ads', '1-campaign.csv'), 'utf8')
    expect(text).to.not.contain('Performance Max')
    expect(text).to.not.contain('Demand Gen')
  })

  it('rule 2: editor/ holds the image campaigns and several pictures per ratio, cropped from the photos without upscaling', async () => {
    const {default: sharp} = await import('sharp')
    const ws = readJson<{account: {campaigns: {asset_groups: {images: {height: number; kind: string; path: string; width: number}[]}[]; type: string}[]}}>(join(runDir, 'workspace.json'))
    const images = ws.account.campaigns.filter((c) => c.type !== 'search').flatMap((c) => c.asset_groups.flatMap((g) => g.images))
    // 8 asset groups, 3 products with photos each: 3 pictures per ratio.
    expect(images.length).to.equal(8 * 3 * 3)
    // The example's photos are 640x640: each ratio at the largest size they hold, none upscaled.
    const want: Record<string, string> = {landscape: '640x335', portrait: '512x640', square: '640x640'}
    for (const img of images) {
      const meta = await sharp(join(runDir, img.path)).metadata()
      expect(`${meta.width}x${meta.height}`, img.path).to.equal(want[img.kind])
      expect(`${img.width}x${img.height}`).to.equal(want[img.kind])
      expect(img.path).to.match(/^google-ads\/editor\/images\/acme-coffee-(performance-max|demand-gen)\/[a-z-]+-(landscape|square|portrait)-[123]\.jpg$/)
    }
    // No band, logo or letterbox drawn over the photo: the bottom rows are the photo's own background.
    const bottom = await sharp(join(runDir, images[0].path)).extract({height: 4, left: 0, top: 331, width: 640}).stats()
    for (const ch of bottom.channels.slice(0, 3)) expect(ch.mean).to.be.greaterThan(150)
  })

  it('rule 4: transcripts are named after missions with ":" as "-"', () => {
    const names = readdirSync(join(runDir, 'transcripts')).sort()
    expect(names).to.include('plan.jsonl')
    expect(names).to.include('campaign-acme-coffee-brand.jsonl')
    expect(names.every((n) => !n.includes(':'))).to.equal(true)
  })

  it('rule 6: workspace.json points input.logo at the copy in input/', () => {
    const ws = readJson<{input: {logo: string}; missions: Record<string, {attempts: number; status: unknown; usage: unknown}>; version: number}>(join(runDir, 'workspace.json'))
    expect(ws.version).to.equal(1)
    expect(ws.input.logo).to.equal('input/logo.png')
    expect(Object.keys(ws.missions)).to.include.members(['plan', 'campaign:acme-coffee-brand', 'campaign:acme-coffee-performance-max'])
    for (const m of Object.values(ws.missions)) {
      expect(m.status).to.equal('finished')
      expect(m.attempts).to.equal(1)
      expect(m.usage).to.have.keys('input_tokens', 'output_tokens', 'cost_usd')
    }
  })

  it('writes run.json with status, provider, model, exit code and totals', () => {
    const run = readJson(join(runDir, 'run.json'))
    expect(run).to.deep.include({exit_code: 0, model: null, provider: 'local', status: 'success', version: 1})
    expect(run.run_id).to.equal(runDir.split('/').pop())
    expect(run.totals).to.deep.equal({cost_usd: 0, failed_missions: 0, input_tokens: 0, missions: 8, output_tokens: 0})
  })

  it('writes report.md with its sections in order', () => {
    const report = readFileSync(join(runDir, 'report.md'), 'utf8')
    expect(report.startsWith('# Campaign run ')).to.equal(true)
    expect(report).to.contain('**Status: SUCCESS** (exit 0)')
    const order = ['## Summary', '## Budget and bids', '## Validation', '## URL check', '## Usage', '## How to import']
    const at = order.map((h) => report.indexOf(h))
    expect(at.every((i) => i > 0)).to.equal(true)
    expect([...at].sort((a, b) => a - b)).to.deep.equal(at)
    expect(report).to.contain('Editor does not import the link between an asset group and its pictures')
  })

  it('numbers events from 1 with RFC 3339 UTC times, run_started first and run_finished last', () => {
    expect(events.map((e) => e.seq)).to.deep.equal(events.map((_, i) => i + 1))
    for (const e of events) expect(e.ts).to.match(RFC3339_UTC)
    expect(events[0].event).to.deep.equal({model: null, provider: 'local', run_dir: runDir, run_id: runDir.split('/').pop(), type: 'run_started'})
    const last = events.at(-1)?.event
    expect(last).to.deep.include({exit_code: 0, ok: true, type: 'run_finished'})
  })

  it('emits every event type a successful offline run has, with their fields', () => {
    const byType = new Map<string, Record<string, unknown>>()
    for (const e of events) if (!byType.has(e.event.type)) byType.set(e.event.type, e.event)
    expect(byType.get('mission_started')).to.have.keys('type', 'mission', 'attempt')
    expect(byType.get('agent_text')).to.have.keys('type', 'mission', 'text')
    expect(byType.get('tool_called')).to.have.keys('type', 'mission', 'tool', 'summary')
    expect(byType.get('tool_finished')).to.have.keys('type', 'mission', 'tool', 'ok', 'summary')
    expect(byType.get('usage')).to.have.keys('type', 'mission', 'input_tokens', 'output_tokens', 'cost_usd')
    expect(byType.get('mission_finished')).to.deep.equal({mission: 'plan', ok: true, reason: null, type: 'mission_finished'})
    expect(byType.get('validation')).to.deep.equal({errors: [], type: 'validation', warnings: []})
    const steps = events.filter((e) => e.event.type === 'step').map((e) => e.event.name)
    expect(steps).to.deep.equal(['cross-negatives', 'images', 'validate', 'url-check', 'export'])
    const artifacts = events.filter((e) => e.event.type === 'artifact_written').map((e) => e.event.path as string)
    expect(artifacts).to.include.members(['report.md', ...SEARCH.map((f) => `google-ads/${f}`), 'google-ads/editor/image-campaigns.csv'])
    expect(artifacts.filter((p) => p.endsWith('.jpg'))).to.have.length(72)
    expect(artifacts).to.include('google-ads/editor/images/logo.png')
  })

  it('--format json prints the same lines as events.ndjson', () => {
    expect(stdout).to.equal(readFileSync(join(runDir, 'events.ndjson'), 'utf8'))
  })

  it('saves workspace.json before reporting each successful mutating call', () => {
    const mutating = events.filter((e) => e.event.type === 'tool_finished' && e.event.ok && ['upsert_ad_group', 'set_account_plan', 'set_assets', 'set_brand_kit', 'set_campaign_negatives'].includes(e.event.tool as string))
    expect(mutating.length).to.be.greaterThan(20)
  })

  it('leaves workspace.json indented for hand edits once the run ends', () => {
    const text = readFileSync(join(runDir, 'workspace.json'), 'utf8')
    expect(text.startsWith('{\n "')).to.equal(true)
    expect(text).to.contain('\n "version": 1')
    expect(text.endsWith('}\n')).to.equal(true)
  })

  describe('export and rules 3, 5 and 7', () => {
    let copy: string

    beforeEach(() => {
      copy = join(tempDir(), 'run')
      cpSync(runDir, copy, {recursive: true})
    })

    it('export rebuilds the same files from workspace.json alone (rule 5) and appends events (rule 7)', async () => {
      rmSync(join(copy, 'input'), {force: true, recursive: true})
      rmSync(join(copy, 'google-ads', '1-campaign.csv'))
      writeFileSync(join(copy, 'report.md'), 'stale')
      const before = readEvents(copy)
      const res = await runCli(['campaign', 'export', copy, '--skip-url-check'])
      expect(res.code, res.stderr).to.equal(0)
      expect(res.stdout).to.contain('success (exit 0)')
      expectGolden(copy)
      const after = readEvents(copy)
      expect(after.slice(0, before.length)).to.deep.equal(before)
      expect(after[before.length]).to.deep.include({seq: before.length + 1})
      expect(after[before.length].event.type).to.equal('run_started')
      expect(after.slice(before.length).some((e) => e.event.type === 'mission_started')).to.equal(false)
      expect(readFileSync(join(copy, 'report.md'), 'utf8')).to.contain('# Campaign run')
    })

    it('an invalid workspace exits 3, writes no CSV and keeps the pictures (rule 3)', async () => {
      const file = join(copy, 'workspace.json')
      const ws = readJson<{account: {campaigns: {ad_groups: {ads: {headlines: string[]}[]}[]}[]}}>(file)
      ws.account.campaigns[1].ad_groups[0].ads[0].headlines[0] = 'A headline that is far too long for Google'
      writeFileSync(file, JSON.stringify(ws))
      const res = await runCli(['campaign', 'export', copy, '--skip-url-check', '--format', 'json'])
      expect(res.code).to.equal(3)
      expect(res.stderr).to.match(/^Error: run invalid: 1 validation errors/m)
      expect(csvFiles(copy)).to.deep.equal([])
      expect(readdirSync(join(copy, 'google-ads', 'editor', 'images', 'acme-coffee-performance-max'))).to.have.length(45)
      const run = readJson(join(copy, 'run.json'))
      expect(run).to.deep.include({exit_code: 3, status: 'invalid'})
      const lines = res.stdout.trim().split('\n').map((l) => JSON.parse(l) as Line & {code?: string})
      const validation = lines.find((l) => l.event?.type === 'validation')?.event as unknown as {errors: {code: string; path: string}[]}
      expect(validation.errors).to.deep.equal([
        {code: 'headline_too_long', message: 'headline "A headline that is far too long for Google" has 42 characters; the limit is 30', path: 'account.campaigns[1].ad_groups[0].ads[0].headlines[0]', severity: 'error'},
      ])
      expect(lines.find((l) => l.event?.type === 'run_finished')?.event).to.deep.include({exit_code: 3, ok: false})
      expect(readFileSync(join(copy, 'report.md'), 'utf8')).to.contain('**Status: INVALID** (exit 3)')
    })

    it('a hand edit that breaks the shape of workspace.json is named, exit 2', async () => {
      const file = join(copy, 'workspace.json')
      const ws = readJson<{account: {campaigns: {ad_groups: {keywords: {match: string}[]}[]}[]}}>(file)
      ws.account.campaigns[2].ad_groups[1].keywords[0].match = 'exactly'
      writeFileSync(file, JSON.stringify(ws))
      const res = await runCli(['campaign', 'export', copy])
      expect(res.code).to.equal(2)
      expect(res.stderr).to.contain('workspace.json: account.campaigns[2].ad_groups[1].keywords[0].match must be one of exact, phrase, broad')
    })

    it('a workspace.json whose version is not 1 fails to load with a clear message', async () => {
      const file = join(copy, 'workspace.json')
      writeFileSync(file, JSON.stringify({...readJson(file), version: 2}))
      const res = await runCli(['campaign', 'export', copy])
      expect(res.code).to.equal(2)
      expect(res.stderr).to.match(/workspace\.json has version 2; this toolkit reads workspace version 1 only/)
    })
  })
})

describe('campaign generate: incomplete runs and --resume', function () {
  this.timeout(120_000)

  it('exits 1 when missions fail, writes no CSV, then --resume finishes only the unfinished missions', async () => {
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--max-turns', '6'])
    expect(res.code).to.equal(1)
    expect(res.stderr).to.match(/^Error: run incomplete: \d+ of \d+ missions did not finish/m)
    const runDir = runDirIn(out)
    expect(csvFiles(runDir)).to.deep.equal([])
    expect(readJson(join(runDir, 'run.json'))).to.deep.include({exit_code: 1, status: 'incomplete'})
    const events = readEvents(runDir)
    const refused = events.find((e) => e.event.type === 'tool_finished' && e.event.ok === false)
    expect(refused?.event.summary).to.contain('--max-turns')
    const failed = events.filter((e) => e.event.type === 'mission_finished' && e.event.ok === false)
    expect(failed.length).to.be.greaterThan(0)
    expect(failed[0].event.reason).to.be.a('string')
    const ws = readJson<{missions: Record<string, {attempts: number; status: unknown}>}>(join(runDir, 'workspace.json'))
    const unfinished = Object.entries(ws.missions).filter(([, m]) => m.status !== 'finished').map(([id]) => id)
    const finished = Object.entries(ws.missions).filter(([, m]) => m.status === 'finished').map(([id]) => id)
    expect(unfinished.length).to.be.greaterThan(0)
    expect(ws.missions[unfinished[0]].status).to.have.nested.property('failed.reason')
    expect(ws.missions[unfinished[0]].attempts).to.equal(2)

    const again = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check'])
    expect(again.code, again.stderr).to.equal(0)
    const after = readEvents(runDir)
    const started = after.slice(events.length).filter((e) => e.event.type === 'mission_started').map((e) => e.event.mission)
    expect(new Set(started)).to.deep.equal(new Set(unfinished))
    expect(started.some((m) => finished.includes(m as string))).to.equal(false)
    expect(readJson(join(runDir, 'run.json'))).to.deep.include({exit_code: 0, status: 'success'})
    expectGolden(runDir)
  })

  it('refuses bad input with exit 2 and the file and line, and creates no run directory', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('currency = "USD"', 'currency = "USD"\nmax_cpcs = 2'))
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', file, '--out', out])
    expect(res.code).to.equal(2)
    const line = readFileSync(file, 'utf8').split('\n').findIndex((l) => l.startsWith('max_cpcs')) + 1
    expect(res.stderr.trim()).to.equal(`Error: ${file}:${line}: unknown key "max_cpcs" in [budget]; did you mean "max_cpc"?`)
    expect(readdirSync(out)).to.deep.equal([])
  })

  it('refuses a bad catalog row with the catalog file and line', async () => {
    const dir = copyExample()
    const catalog = join(dir, 'catalog.csv')
    const rows = readFileSync(catalog, 'utf8').split('\n')
    rows[5] = rows[5].replace(/,\d+\.\d+,/, ',twelve,')
    writeFileSync(catalog, rows.join('\n'))
    const res = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', tempDir()])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.contain(`${catalog}:6: product "AC-005": price must be an amount`)
  })

  it('usage errors exit 2: no input, both input and --resume, unknown provider, missing logo', async () => {
    expect((await runCli(['campaign', 'generate'])).code).to.equal(2)
    expect((await runCli(['campaign', 'generate', 'x.toml', '--resume', 'y'])).code).to.equal(2)
    const p = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', 'locl', '--out', tempDir()])
    expect(p.code).to.equal(2)
    expect(p.stderr).to.contain('unknown provider "locl" (did you mean "local"?)')
    const dir = copyExample()
    rmSync(join(dir, 'logo.png'))
    const l = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', tempDir()])
    expect(l.code).to.equal(2)
    expect(l.stderr).to.match(/business\.toml:\d+: logo file not found: logo\.png/)
  })

  it('export and --resume refuse a folder that is not a run directory, or a workspace.json that is not JSON', async () => {
    const empty = tempDir()
    const a = await runCli(['campaign', 'export', empty])
    expect(a.code).to.equal(2)
    expect(a.stderr).to.contain(`${join(empty, 'workspace.json')} not found: is ${empty} a run directory?`)
    const b = await runCli(['campaign', 'generate', '--resume', empty])
    expect(b.code).to.equal(2)
    writeFileSync(join(empty, 'workspace.json'), '{"version": 1,')
    const c = await runCli(['campaign', 'export', empty, '--format', 'json'])
    expect(c.code).to.equal(2)
    expect(c.stderr).to.match(/workspace\.json is not valid JSON/)
    expect(JSON.parse(c.stdout.trim())).to.deep.include({type: 'error'})
  })

  it('init writes a commented business.toml that generate accepts, and refuses to overwrite', async () => {
    const dir = tempDir()
    const file = join(dir, 'business.toml')
    const res = await runCli(['campaign', 'init', file])
    expect(res.code, res.stderr).to.equal(0)
    expect(readFileSync(file, 'utf8')).to.contain('# business.toml')
    const {parseBusinessToml} = await import('../src/input/business.js')
    const parsed = await parseBusinessToml(readFileSync(file, 'utf8'), file)
    expect(parsed.business.name).to.equal('Acme Coffee')
    const again = await runCli(['campaign', 'init', file])
    expect(again.code).to.equal(2)
    expect(again.stderr).to.contain('already exists; pass --force')
  })
})
