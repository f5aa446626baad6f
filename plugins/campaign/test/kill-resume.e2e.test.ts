import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {exampleDir, goldenDir, type Line, readJson, runCli, runJs, tempDir} from './helpers.js'

interface Ws {
  account: {campaigns: {ad_groups: {name: string}[]; slug: string}[]}
  missions: Record<string, {status: unknown}>
  version: number
}

function events(runDir: string): Line[] {
  // The last line may be cut short by the kill; only whole lines count.
  return readFileSync(join(runDir, 'events.ndjson'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Line]
      } catch {
        return []
      }
    })
}

describe('resume after SIGKILL in the middle of a mission', function () {
  this.timeout(120_000)

  it('loses no reported mutation, leaves a whole workspace.json, and resumes to the same files', async () => {
    const out = tempDir()
    const child = spawn(process.execPath, [runJs, 'campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--parallel', '1'], {
      env: {...process.env, HOME: tempDir(), NO_COLOR: '1', TOOLKIT_CAMPAIGN_LOCAL_DELAY_MS: '50'},
      stdio: 'ignore',
    })
    const exited = new Promise<null | string>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
    let runDir = ''
    // Wait until a campaign mission has saved an ad group but not yet finished, then kill -9.
    for (let i = 0; i < 1500; i++) {
      await sleep(10)
      const dirs = existsSync(out) ? readdirSync(out) : []
      if (dirs.length === 0) continue
      runDir = join(out, dirs[0])
      if (!existsSync(join(runDir, 'events.ndjson'))) continue
      const seen = events(runDir)
      const upserts = seen.filter((e) => e.event.type === 'tool_finished' && e.event.tool === 'upsert_ad_group' && e.event.ok)
      const midway = upserts.find((u) => !seen.some((e) => e.event.type === 'mission_finished' && e.event.mission === u.event.mission))
      if (upserts.length >= 3 && midway) break
    }
    child.kill('SIGKILL')
    expect(await exited).to.equal('SIGKILL')

    const ws = JSON.parse(readFileSync(join(runDir, 'workspace.json'), 'utf8')) as Ws
    expect(ws.version).to.equal(1)
    const log = events(runDir)
    expect(log.some((e) => e.event.type === 'run_finished')).to.equal(false)
    const running = Object.entries(ws.missions).filter(([, m]) => m.status === 'running')
    expect(running, 'a mission was cut off mid-way').to.have.length(1)
    // Every ad group whose upsert was reported as done is in the saved workspace.
    const reported = log.filter((e) => e.event.type === 'tool_called' && e.event.tool === 'upsert_ad_group')
    let checked = 0
    for (const call of reported) {
      const done = log.find((e) => e.seq > call.seq && e.event.type === 'tool_finished' && e.event.mission === call.event.mission && e.event.tool === 'upsert_ad_group')
      if (!done?.event.ok) continue
      const name = /^ad group "(.+?)"/.exec(call.event.summary as string)?.[1]
      const slug = (call.event.mission as string).slice('campaign:'.length)
      const campaign = ws.account.campaigns.find((c) => c.slug === slug)
      expect(campaign?.ad_groups.map((g) => g.name), `${slug} / ${name}`).to.include(name)
      checked++
    }
    expect(checked).to.be.at.least(3)
    expect(readJson(join(runDir, 'run.json'))).to.deep.include({status: 'incomplete'})

    const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const after = events(runDir)
    expect(after.map((e) => e.seq)).to.deep.equal(after.map((_, i) => i + 1))
    const restarted = after.slice(log.length).filter((e) => e.event.type === 'mission_started').map((e) => e.event.mission)
    expect(restarted).to.include(running[0][0])
    expect(restarted).to.not.include('plan')
    for (const f of ['1-campaign.csv', '2-ad-groups.csv', '3-keywords.csv', '4-negative-keywords.csv', '5-responsive-search-ads.csv']) {
      expect(readFileSync(join(runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(goldenDir, f), 'utf8'))
    }
  })
})
