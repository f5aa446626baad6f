import {rmSync} from 'node:fs'
import {join} from 'node:path'

import type {Engine} from '../engine/types.js'
import type {Logger} from '../engine/types.js'
import {backupDataDir} from './backup.js'
import {manifestPath} from './manifest.js'
import {Periodic} from './periodic.js'
import {readSchedules, readScheduleStates, type Schedule, type ScheduleState, writeScheduleStates} from './schedules.js'

let running: Scheduler | undefined

/**
 * Runs the data directory's backup schedules inside the server process. The schedule file is
 * re-read on every tick, so `toolkit svc schedule` / `cancel-schedule` take effect within
 * seconds without talking to the server; what ran (files, last error) is kept in
 * `schedule-state.json`, so chains continue and the interval holds across restarts.
 */
export class Scheduler {
  private readonly loop: Periodic
  private states: Record<string, ScheduleState>

  constructor(private readonly engine: Engine, private readonly log: Logger, tickMs = 1000) {
    this.states = readScheduleStates(engine.dataDir)
    this.loop = new Periodic(() => this.tick(), {failure: 'schedules could not be read', log, tickMs})
  }

  /** Health check entry: failing schedules make it a warning, with their last error. */
  check(): {component: string; failing: Array<{error?: string; id: string}>; schedules: number; status: 'ok' | 'warning'} {
    let schedules: Schedule[] = []
    try {
      schedules = readSchedules(this.engine.dataDir)
    } catch {
      // reported by list-schedules
    }
    const failing = schedules.filter((s) => failingState(this.states[s.id])).map((s) => ({error: this.states[s.id]?.lastError, id: s.id}))
    return {component: 'schedules', failing, schedules: schedules.length, status: failing.length > 0 ? 'warning' : 'ok'}
  }

  stop(): Promise<void> {
    return this.loop.stop()
  }

  private async tick(): Promise<void> {
    const schedules = readSchedules(this.engine.dataDir)
    for (const s of schedules) {
      const st = this.states[s.id]
      const last = Math.max(Date.parse(st?.lastRunAt ?? '') || 0, Date.parse(st?.lastErrorAt ?? '') || 0) || Date.parse(s.createdAt)
      if (Date.now() - last < s.intervalMinutes * 60_000) continue
      await this.runOne(s)
    }
    for (const id of Object.keys(this.states)) if (!schedules.some((s) => s.id === id)) delete this.states[id]
  }

  private async runOne(s: Schedule): Promise<void> {
    const st: ScheduleState = this.states[s.id] ?? {files: [], runs: 0}
    this.states[s.id] = st
    const stamp = new Date().toISOString().replaceAll(/[:.]/g, '-')
    // An incremental chain starts with a full bundle and restarts once it holds --keep files.
    const chainFull = s.mode === 'incremental' && (st.lastMain === undefined || (s.keep !== undefined && st.files.length >= s.keep))
    const incremental = s.mode === 'incremental' && !chainFull
    const output = join(s.outputDir, `svc-${s.id}-${stamp}-${incremental ? 'incremental.bundle' : s.mode === 'full' ? 'full.tar.gz' : 'full.bundle'}`)
    try {
      const m = await backupDataDir(this.engine, {baseCommit: incremental ? st.lastMain : undefined, format: s.mode === 'full' ? 'tar.gz' : 'bundle', output})
      const previous = st.files
      st.files = chainFull ? [m.path] : [...st.files, m.path]
      if (s.mode === 'full' && s.keep !== undefined) {
        for (const f of st.files.slice(0, Math.max(0, st.files.length - s.keep))) removeBackup(f)
        st.files = st.files.slice(-s.keep)
      }
      // A new chain replaces the previous one only once its full backup exists.
      if (chainFull) for (const f of previous) removeBackup(f)
      st.lastFile = m.path
      st.lastMain = m.refs.find((r) => r.name === 'refs/heads/main')?.commit ?? st.lastMain
      st.lastRunAt = new Date().toISOString()
      st.runs++
      this.log.info('scheduled backup written', {file: m.path, id: s.id, type: m.type})
    } catch (error) {
      const message = (error as Error).message
      if (/nothing was written after base commit/.test(message)) {
        st.lastRunAt = new Date().toISOString()
        st.runs++
      } else {
        st.lastError = message
        st.lastErrorAt = new Date().toISOString()
        this.log.error('scheduled backup failed', {error: message, id: s.id})
      }
    }
    writeScheduleStates(this.engine.dataDir, this.states)
  }
}

function failingState(st: ScheduleState | undefined): boolean {
  return st?.lastErrorAt !== undefined && (st.lastRunAt === undefined || st.lastErrorAt > st.lastRunAt)
}

function removeBackup(file: string): void {
  rmSync(file, {force: true})
  rmSync(manifestPath(file), {force: true})
}

/** Server hooks (servers/run.ts, servers/health.ts). */
export function startScheduler(engine: Engine, log: Logger): void {
  running = new Scheduler(engine, log.child('svc.schedule'))
}

export async function stopScheduler(): Promise<void> {
  await running?.stop()
  running = undefined
}

export function scheduleHealthChecks(): Array<ReturnType<Scheduler['check']>> {
  return running ? [running.check()] : []
}
