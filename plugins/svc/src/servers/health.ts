import {readdir, stat, statfs} from 'node:fs/promises'
import {totalmem} from 'node:os'
import {join} from 'node:path'

import type {Engine} from '../engine/types.js'
import {followHealthChecks} from '../ops/follower.js'
import {replicationHealthChecks} from '../ops/replicator.js'
import {scheduleHealthChecks} from '../ops/scheduler.js'

export type CheckStatus = 'critical' | 'ok' | 'warning'

export interface HealthCheck {
  [field: string]: unknown
  component: string
  status: CheckStatus
}

export interface HealthOptions {
  /** Megabytes; the memory check and `memory.total` use it when set. */
  memoryLimitMb?: number
  startedAt: number
  version: string
}

export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB']
  let i = 0
  let v = n
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`
}

export function formatDuration(ms: number): string {
  let s = Math.floor(ms / 1000)
  const d = Math.floor(s / 86_400)
  s -= d * 86_400
  const h = Math.floor(s / 3600)
  s -= h * 3600
  const m = Math.floor(s / 60)
  s -= m * 60
  return [d ? `${d}d` : '', d || h ? `${h}h` : '', d || h || m ? `${m}m` : '', `${s}s`].filter(Boolean).join(' ')
}

async function dirSize(dir: string): Promise<number> {
  let total = 0
  let entries
  try {
    entries = await readdir(dir, {withFileTypes: true})
  } catch {
    return 0
  }
  for (const e of entries) {
    const p = join(dir, e.name)
    if (e.isDirectory()) total += await dirSize(p)
    else total += await stat(p).then((s) => s.size, () => 0)
  }
  return total
}

/** The health figures; the data directory's size is recomputed at most every 30 s. */
export class Health {
  private sizeAt = 0
  private sizeBytes = 0
  private sizing: Promise<void> | undefined

  constructor(private readonly engine: Engine, private readonly o: HealthOptions) {}

  /**
   * `GET /healthz`: whether writes can be made now. A supervisor's liveness probe acts on it, so
   * it fails while the Git writer is down, not only while the server drains.
   */
  liveness(): {ok: boolean; reason?: string} {
    return this.engine.canWrite()
  }

  /** `GET /health`: every check, and whether the service as a whole is healthy. */
  async checks(): Promise<{checks: HealthCheck[]; status: 'healthy' | 'unhealthy'}> {
    const d = this.engine.details()
    const mem = this.memory()
    const checks: HealthCheck[] = []
    const pct = mem.limit > 0 ? mem.used / mem.limit : 0
    checks.push({
      component: 'memory',
      limit: formatBytes(mem.limit),
      percent: Math.round(pct * 1000) / 10,
      status: pct > 0.95 ? 'critical' : pct > 0.85 ? 'warning' : 'ok',
      used: formatBytes(mem.used),
    })
    checks.push({
      component: 'wal',
      'max-pending-entries': d.maxPendingEntries,
      'pending-entries': d.pendingEntries,
      status: d.writerError || d.pendingEntries >= d.maxPendingEntries ? 'critical' : d.pendingEntries > 100 ? 'warning' : 'ok',
      'writer-restarts': d.writerRestarts,
      ...(d.writerError ? {error: d.writerError} : {}),
    })
    try {
      const fs = await statfs(this.engine.dataDir)
      const free = fs.bavail * fs.bsize
      checks.push({component: 'disk', free: formatBytes(free), 'free-bytes': free, status: free < 100 * 1024 * 1024 ? 'critical' : free < 5 * 1024 ** 3 ? 'warning' : 'ok'})
    } catch (error) {
      checks.push({component: 'disk', error: (error as Error).message, status: 'critical'})
    }
    const damage = this.engine.damage()
    checks.push({
      component: 'storage',
      status: damage.length > 0 ? 'critical' : 'ok',
      ...(damage.length > 0
        ? {
            damaged: damage.slice(0, 20),
            error: `${damage.length} document(s) unreadable (${damage.slice(0, 3).map((x) => `${x.id} on ${x.branch}: git object ${x.object} ${x.reason ?? 'is missing'}`).join(', ')}); run toolkit svc diagnose, then restore from the last backup or put them again`,
          }
        : {}),
    })
    const idx = d.branches.map((b) => ({branch: b.name, documents: b.index.documents, expected: b.documents, pending: b.index.pending, state: b.index.state}))
    const indexBad = idx.some((b) => b.state === 'building' || (b.state === 'ready' && b.documents !== b.expected))
    checks.push({branches: idx, component: 'index', status: idx.every((b) => b.state === 'disabled') ? 'ok' : indexBad ? 'warning' : 'ok'})
    checks.push(...scheduleHealthChecks(), ...replicationHealthChecks(), ...followHealthChecks())
    return {checks, status: checks.some((c) => c.status === 'critical') ? 'unhealthy' : 'healthy'}
  }

  /** `GET /api/v1/health`: the record of the spec. */
  async record(): Promise<Record<string, unknown>> {
    await this.refreshSize()
    const mem = this.memory()
    const {status} = await this.checks()
    return {
      memory: {total: formatBytes(mem.limit), used: formatBytes(mem.used)},
      status: status === 'healthy' ? 'ok' : 'unhealthy',
      storage: {documents: this.engine.stats().documents, size: formatBytes(this.sizeBytes)},
      uptime: formatDuration(Date.now() - this.o.startedAt),
      version: this.o.version,
    }
  }

  private memory(): {limit: number; used: number} {
    return {limit: this.o.memoryLimitMb ? this.o.memoryLimitMb * 1024 * 1024 : totalmem(), used: process.memoryUsage.rss()}
  }

  private refreshSize(): Promise<void> {
    if (Date.now() - this.sizeAt < 30_000) return Promise.resolve()
    this.sizing ??= dirSize(this.engine.dataDir).then((n) => {
      this.sizeBytes = n
      this.sizeAt = Date.now()
      this.sizing = undefined
    })
    return this.sizing
  }
}
