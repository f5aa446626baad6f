import {randomBytes} from 'node:crypto'
import {existsSync, readFileSync} from 'node:fs'
import {join, resolve} from 'node:path'

import {writeFileAtomicSync} from '@toolkit/kit'

import {EngineError} from '../engine/errors.js'
import {requireDataDir} from './data-dir.js'

/** A backup schedule as the operator defined it (`schedules.json` in the data directory). */
export interface Schedule {
  createdAt: string
  id: string
  intervalMinutes: number
  /** Backups kept in the output directory; older ones are deleted after each run (incremental: whole chains). */
  keep?: number
  mode: 'full' | 'incremental'
  outputDir: string
}

/** What the server last did for a schedule (`schedule-state.json`, written only by the server). */
export interface ScheduleState {
  /** Files of the current chain (incremental) or the kept backups (full), oldest first. */
  files: string[]
  lastError?: string
  lastErrorAt?: string
  lastFile?: string
  /** main's commit of the last backup: the base of the next incremental. */
  lastMain?: string
  lastRunAt?: string
  runs: number
}

export type ScheduleView = Schedule & {nextRunAt?: string; state: 'failing' | 'ok' | 'waiting'} & Partial<ScheduleState>

export const SCHEDULES_FILE = 'schedules.json'
export const SCHEDULE_STATE_FILE = 'schedule-state.json'

function writeAtomic(file: string, value: unknown): void {
  writeFileAtomicSync(file, `${JSON.stringify(value, null, 2)}\n`)
}

export function readSchedules(dataDir: string): Schedule[] {
  const file = join(dataDir, SCHEDULES_FILE)
  if (!existsSync(file)) return []
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as {schedules: Schedule[]}).schedules ?? []
  } catch (error) {
    throw new EngineError('internal', `${file} is not readable (${(error as Error).message}); fix or remove it`)
  }
}

export function readScheduleStates(dataDir: string): Record<string, ScheduleState> {
  const file = join(dataDir, SCHEDULE_STATE_FILE)
  if (!existsSync(file)) return {}
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as {states: Record<string, ScheduleState>}).states ?? {}
  } catch {
    return {}
  }
}

export function writeScheduleStates(dataDir: string, states: Record<string, ScheduleState>): void {
  writeAtomic(join(dataDir, SCHEDULE_STATE_FILE), {format: 1, states})
}

/** Adds a schedule; a running server picks it up within seconds (it re-reads the file). */
export function addSchedule(o: {dataDir: string; intervalMinutes: number; keep?: number; mode: string; outputDir: string}): Schedule {
  const {dataDir} = requireDataDir(o.dataDir)
  if (o.mode !== 'full' && o.mode !== 'incremental') throw new EngineError('invalid_argument', `--mode must be full or incremental, got ${JSON.stringify(o.mode)}`)
  if (!Number.isFinite(o.intervalMinutes) || o.intervalMinutes <= 0) throw new EngineError('invalid_argument', `--interval must be a positive number of minutes, got ${o.intervalMinutes}`)
  if (o.keep !== undefined && (!Number.isInteger(o.keep) || o.keep < 1)) throw new EngineError('invalid_argument', `--keep must be a positive integer, got ${o.keep}`)
  const schedule: Schedule = {createdAt: new Date().toISOString(), id: randomBytes(4).toString('hex'), intervalMinutes: o.intervalMinutes, ...(o.keep === undefined ? {} : {keep: o.keep}), mode: o.mode, outputDir: resolve(o.outputDir)}
  writeAtomic(join(dataDir, SCHEDULES_FILE), {format: 1, schedules: [...readSchedules(dataDir), schedule]})
  return schedule
}

export function cancelSchedule(o: {dataDir: string; id: string}): Schedule {
  const {dataDir} = requireDataDir(o.dataDir)
  const all = readSchedules(dataDir)
  const found = all.find((s) => s.id === o.id)
  if (!found) throw new EngineError('not_found', `no schedule with id ${o.id} (see toolkit svc list-schedules)`)
  writeAtomic(join(dataDir, SCHEDULES_FILE), {format: 1, schedules: all.filter((s) => s.id !== o.id)})
  return found
}

export function listSchedules(o: {dataDir: string}): ScheduleView[] {
  const {dataDir} = requireDataDir(o.dataDir)
  const states = readScheduleStates(dataDir)
  return readSchedules(dataDir).map((s) => {
    const st = states[s.id]
    const last = st?.lastRunAt ?? st?.lastErrorAt
    const failing = st?.lastErrorAt !== undefined && (st.lastRunAt === undefined || st.lastErrorAt > st.lastRunAt)
    return {...s, ...st, nextRunAt: new Date(Date.parse(last ?? s.createdAt) + s.intervalMinutes * 60_000).toISOString(), state: failing ? 'failing' : st ? 'ok' : 'waiting'}
  })
}
