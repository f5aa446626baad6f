import {expect} from 'chai'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {runMissions} from '../src/missions/scheduler.js'
import type {Provider} from '../src/providers/provider.js'
import {type EventLine, EventLog} from '../src/run/events.js'
import {loadWorkspace, saveWorkspace} from '../src/run/workspace-store.js'
import {totalsOf} from '../src/run/run-json.js'
import type {Workspace} from '../src/types.js'
import {sharedExampleRun, tempDir} from './helpers.js'

describe('missions', function () {
  this.timeout(60_000)
  let base: Workspace

  before(async () => {
    base = loadWorkspace((await sharedExampleRun()).runDir)
  })

  it('runs campaign missions at most --parallel at a time, retries a failed attempt and adds up usage', async () => {
    const ws = structuredClone(base)
    for (const [id, m] of Object.entries(ws.missions)) if (id !== 'plan') Object.assign(m, {attempts: 0, status: 'pending'})
    const dir = tempDir()
    const lines: EventLine[] = []
    const events = new EventLog(join(dir, 'events.ndjson'), [(l) => lines.push(l)])
    let running = 0
    let peak = 0
    const tries = new Map<string, number>()
    // An API-like provider: one "model response" per call, usage reported after each.
    const provider: Provider = {
      model: 'fake-1',
      name: 'fake',
      async runMission(s) {
        running++
        peak = Math.max(peak, running)
        try {
          tries.set(s.mission, (tries.get(s.mission) ?? 0) + 1)
          s.text(`working on ${s.mission}`)
          await s.call('get_brief', {})
          s.usage({cost_usd: 0.01, input_tokens: 1000, output_tokens: 200})
          await sleep(20)
          if (s.mission.endsWith('-accessories') && tries.get(s.mission) === 1) throw new Error('HTTP 529 overloaded')
          await s.call('finish', {summary: 'done'})
          s.usage({cost_usd: 0.005, input_tokens: 500, output_tokens: 100})
        } finally {
          running--
        }
      },
    }
    await runMissions({events, maxAttempts: 2, maxTurns: 50, parallel: 3, provider, runDir: dir, save: () => saveWorkspace(dir, ws), signal: new AbortController().signal, ws})
    events.close()
    const campaigns = Object.keys(ws.missions).filter((id) => id !== 'plan')
    expect(peak).to.equal(3)
    expect(Object.values(ws.missions).every((m) => m.status === 'finished')).to.equal(true)
    const acc = ws.missions['campaign:acme-coffee-accessories']
    expect(acc.attempts).to.equal(2)
    expect(acc.usage).to.deep.equal({cost_usd: 0.025, input_tokens: 2500, output_tokens: 500})
    const failed = lines.find((l) => l.event.type === 'mission_finished' && !l.event.ok)?.event
    expect(failed).to.deep.equal({mission: 'campaign:acme-coffee-accessories', ok: false, reason: 'HTTP 529 overloaded', type: 'mission_finished'})
    expect(lines.filter((l) => l.event.type === 'mission_started' && l.event.mission === 'campaign:acme-coffee-accessories').map((l) => l.event)).to.deep.equal([
      {attempt: 1, mission: 'campaign:acme-coffee-accessories', type: 'mission_started'},
      {attempt: 2, mission: 'campaign:acme-coffee-accessories', type: 'mission_started'},
    ])
    expect(lines.some((l) => l.event.type === 'mission_started' && l.event.mission === 'plan')).to.equal(false)
    const totals = totalsOf(ws)
    expect(totals).to.deep.include({failed_missions: 0, missions: campaigns.length + 1})
    expect(totals.input_tokens).to.equal(base.missions.plan.usage.input_tokens + 1500 * campaigns.length + 1000)
    expect(lines.filter((l) => l.event.type === 'usage')).to.have.length(2 * campaigns.length + 1)
  })

  it('a provider that stops without finish fails the mission; a failed plan stops the run before campaigns', async () => {
    const ws = structuredClone(base)
    ws.missions = {plan: {attempts: 0, status: 'pending', usage: {cost_usd: null, input_tokens: 0, output_tokens: 0}}}
    const dir = tempDir()
    const events = new EventLog(join(dir, 'events.ndjson'))
    const provider: Provider = {model: null, name: 'quiet', async runMission() {}}
    await runMissions({events, maxAttempts: 2, maxTurns: 50, parallel: 2, provider, runDir: dir, save: () => saveWorkspace(dir, ws), signal: new AbortController().signal, ws})
    events.close()
    expect(ws.missions.plan).to.deep.include({attempts: 2, status: {failed: {reason: 'the provider ended the mission without calling finish'}}})
    expect(Object.keys(ws.missions)).to.deep.equal(['plan'])
    expect(totalsOf(ws)).to.deep.equal({cost_usd: null, failed_missions: 1, input_tokens: 0, missions: 1, output_tokens: 0})
  })
})
