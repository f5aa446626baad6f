import {closeSync, openSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {EngineError} from './errors.js'
import {LAYOUT_NAMES} from './layout.js'

export const LOCK_FILE = LAYOUT_NAMES.instanceLock
export const STALE_LOCK_MS = 60_000

export interface InstanceLock {
  /** True when the previous owner died without releasing (crash, SIGKILL). */
  previousCrashed: boolean
  release(): void
}

function aliveProcess(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  return !zombie(pid)
}

/**
 * A process killed and not yet reaped by its parent (for a while in a container without an init)
 * still answers signal 0, but holds no file and runs nothing: a restart right after a SIGKILL
 * must not be refused for it. Linux's /proc only; elsewhere never a zombie.
 */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // pid (comm) state …: comm may hold spaces and parentheses, the state follows the last ')'.
    return stat[stat.lastIndexOf(')') + 2] === 'Z'
  } catch {
    return false
  }
}

// Data directories this process holds: a lock file naming our own pid is ours only if listed here
// (in a container the previous instance often had the same pid, 1).
const held = new Set<string>()

/** One instance per data directory: a lock file holding the owner's pid, taken over only if that pid is gone. */
export function acquireInstanceLock(dataDir: string): InstanceLock {
  const file = join(dataDir, LOCK_FILE)
  if (held.has(file)) throw new EngineError('locked', `data directory ${dataDir} is in use by another svc engine in this process (pid ${process.pid}); close that engine first`)
  let previousCrashed = false
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o644)
      writeSync(fd, JSON.stringify({host: hostname(), pid: process.pid, started: new Date().toISOString()}))
      closeSync(fd)
      held.add(file)
      let released = false
      return {
        previousCrashed,
        release() {
          if (released) return
          released = true
          held.delete(file)
          try {
            unlinkSync(file)
          } catch {
            // already gone
          }
        },
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const owner = readOwner(file)
      if (owner && owner.host === hostname() && owner.pid !== process.pid && aliveProcess(owner.pid)) {
        throw new EngineError('locked', `data directory ${dataDir} is in use by another svc process (pid ${owner.pid}); stop it or choose another --data-dir`)
      }
      if (owner && owner.host !== hostname()) {
        throw new EngineError('locked', `data directory ${dataDir} is locked by host ${owner.host} (pid ${owner.pid}); if that process is gone, remove ${file}`)
      }
      previousCrashed = true
      rmSync(file, {force: true})
    }
  }
  throw new EngineError('locked', `could not lock data directory ${dataDir}`)
}

/** Who holds a data directory, without taking it. */
export function lockState(dataDir: string): {alive: boolean; host?: string; pid?: number; present: boolean; sameHost: boolean} {
  const file = join(dataDir, LOCK_FILE)
  let present = true
  try {
    statSync(file)
  } catch {
    present = false
  }
  const owner = present ? readOwner(file) : undefined
  const sameHost = owner ? owner.host === hostname() : true
  const alive = owner !== undefined && (sameHost ? (owner.pid === process.pid ? held.has(file) : aliveProcess(owner.pid)) : true)
  return {alive, host: owner?.host, pid: owner?.pid, present, sameHost}
}

function readOwner(file: string): {host: string; pid: number} | undefined {
  try {
    const o = JSON.parse(readFileSync(file, 'utf8')) as {host?: unknown; pid?: unknown}
    return typeof o.pid === 'number' && typeof o.host === 'string' ? {host: o.host, pid: o.pid} : undefined
  } catch {
    return undefined
  }
}

/** Git lock files (`*.lock`) in the repository, with their age. */
export function findGitLocks(repo: string): Array<{ageMs: number; path: string}> {
  const out: Array<{ageMs: number; path: string}> = []
  const walk = (dir: string, depth: number): void => {
    let entries
    try {
      entries = readdirSync(dir, {withFileTypes: true})
    } catch {
      return
    }
    for (const e of entries) {
      const p = join(dir, e.name)
      if (e.isDirectory()) {
        // objects/ holds no lock files that matter and can be huge.
        if (depth < 6 && e.name !== 'objects') walk(p, depth + 1)
      } else if (e.name.endsWith('.lock')) {
        try {
          out.push({ageMs: Date.now() - statSync(p).mtimeMs, path: p})
        } catch {
          // raced with its owner
        }
      }
    }
  }
  walk(repo, 0)
  return out
}

/**
 * Removes stale git locks: older than 60 s always; younger ones too when the previous svc
 * process crashed, since while we hold the instance lock nothing else of ours can own them.
 */
export function removeStaleGitLocks(repo: string, previousCrashed: boolean): string[] {
  const removed: string[] = []
  for (const l of findGitLocks(repo)) {
    if (l.ageMs > STALE_LOCK_MS || previousCrashed) {
      rmSync(l.path, {force: true})
      removed.push(l.path)
    }
  }
  if (previousCrashed) {
    // Half-written packs of a killed fast-import are garbage; nothing references them.
    const packDir = join(repo, 'objects', 'pack')
    try {
      for (const f of readdirSync(packDir)) if (f.startsWith('tmp_')) rmSync(join(packDir, f), {force: true})
    } catch {
      // no pack dir yet
    }
  }
  return removed
}

/** Where the engine records the pid of its `git fast-import`, so the next start can find it. */
export const WRITER_PID_FILE = LAYOUT_NAMES.writerPid

function isFastImport(pid: number): boolean {
  if (!aliveProcess(pid)) return false
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('fast-import')
  } catch {
    // No procfs (macOS): a live process with that pid is taken to be the writer.
    return process.platform !== 'linux'
  }
}

/** The pid of the `git fast-import` named in the data directory, when it is still running. */
export function runningWriter(dataDir: string): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(join(dataDir, WRITER_PID_FILE), 'utf8').trim())
  } catch {
    return undefined
  }
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && isFastImport(pid) ? pid : undefined
}

/**
 * A process killed with SIGKILL leaves its `git fast-import` running until that has read the
 * rest of its pipe, and it may still update refs at a checkpoint it finds there. Waits for it to
 * end (it ends by itself: its input is closed) before the engine reads refs, and kills it if it
 * has not ended after `timeoutMs`. Returns the pid waited for, if any; `onWaiting` hears of it
 * before the wait (an operator sees why the start pauses).
 */
export async function waitForOrphanWriter(dataDir: string, onWaiting?: (pid: number) => void, timeoutMs = 30_000): Promise<number | undefined> {
  const pid = runningWriter(dataDir)
  if (pid === undefined) return undefined
  onWaiting?.(pid)
  const until = Date.now() + timeoutMs
  while (isFastImport(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 25))
  if (isFastImport(pid)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // ended meanwhile
    }
    while (aliveProcess(pid) && Date.now() < until + 5000) await new Promise((r) => setTimeout(r, 25))
  }
  return pid
}
