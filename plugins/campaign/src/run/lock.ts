import {ToolkitError} from '@toolkit/kit'
import {linkSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

export const LOCK_FILE = '.lock'

/**
 * Takes the run directory for this process: `<run>/.lock`, holding our pid, appears whole in one
 * step (written aside, then hard-linked, which fails when the name exists). A lock whose process is gone (killed with SIGKILL, say) is stale and taken over; a live one
 * makes the second `generate --resume` or `export` stop with a clear message instead of two
 * processes interleaving events and overwriting each other's files. Returns the release function.
 */
export function lockRunDir(runDir: string, command: string): () => void {
  const file = join(runDir, LOCK_FILE)
  const tmp = `${file}.${process.pid}`
  writeFileSync(tmp, `${JSON.stringify({command, pid: process.pid, since: new Date().toISOString()})}\n`)
  try {
    return take(runDir, file, tmp)
  } finally {
    rmSync(tmp, {force: true})
  }
}

function take(runDir: string, file: string, tmp: string): () => void {
  for (let tries = 0; tries < 3; tries++) {
    try {
      linkSync(tmp, file)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = readHolder(file)
      if (holder !== null && holder.pid !== process.pid && alive(holder.pid)) {
        throw new ToolkitError(
          `run directory ${runDir} is in use by process ${holder.pid} (${holder.command}, since ${holder.since}); wait for it to end, or stop it, then try again`,
          {code: 'run_locked', exit: 2},
        )
      }
      rmSync(file, {force: true})
      continue
    }
    return () => {
      if (readHolder(file)?.pid === process.pid) rmSync(file, {force: true})
    }
  }
  throw new ToolkitError(`cannot lock run directory ${runDir}`, {code: 'run_locked', exit: 2})
}

function readHolder(file: string): null | {command: string; pid: number; since: string} {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as {command?: unknown; pid?: unknown; since?: unknown}
    return typeof v.pid === 'number' ? {command: String(v.command ?? '?'), pid: v.pid, since: String(v.since ?? '?')} : null
  } catch {
    // Unreadable: not one of ours (the file only ever appears whole); treat as stale.
    return null
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
