import {randomBytes} from 'node:crypto'
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'

/** `<out>/<YYYYMMDD-HHMMSS>-<6 hex>`, the time in UTC. */
export function createRunDir(out: string, now = new Date()): {runDir: string; runId: string} {
  const p = (n: number) => String(n).padStart(2, '0')
  const stamp = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}-${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`
  const runId = `${stamp}-${randomBytes(3).toString('hex')}`
  const runDir = join(out, runId)
  mkdirSync(runDir, {recursive: true})
  return {runDir, runId}
}
