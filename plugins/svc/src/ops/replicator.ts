import {spawn} from 'node:child_process'

import type {GitEngine} from '../engine/engine.js'
import {gitEnv} from '../engine/git.js'
import type {Logger} from '../engine/types.js'
import {Periodic} from './periodic.js'
import {listRemotes} from './remotes.js'
import {recordSyncState} from './sync-state.js'
import {branchRefs} from './stage.js'

export interface RemoteStatus {
  /** Consecutive failed pushes since the last success. */
  failures: number
  lastError?: string
  lastErrorAt?: string
  lastPushAt?: string
  /** The heads last pushed successfully (branch -> commit). */
  pushed: Record<string, string>
  remote: string
  /** True while local heads differ from what was last pushed. */
  pending: boolean
  /** Earliest time of the next attempt after a failure (back-off). */
  retryAt?: string
}

const MAX_BACKOFF_MS = 60_000
const PUSH_TIMEOUT_MS = 120_000

let running: Replicator | undefined

/**
 * Pushes every branch to each Git remote of the repository whenever the heads change (checked
 * every second), with `--prune` so removed branches go too and `+` so the remote mirrors this
 * database. A failed push is retried with exponential back-off (1 s, 2 s, ... 60 s); nothing is
 * lost meanwhile, since a push sends everything the remote lacks.
 */
export class Replicator {
  private readonly loop: Periodic
  private status = new Map<string, RemoteStatus>()

  constructor(private readonly engine: GitEngine, private readonly log: Logger, tickMs = 1000) {
    this.loop = new Periodic(() => this.tick(), {failure: 'replication check failed', log, tickMs})
  }

  statuses(): RemoteStatus[] {
    return [...this.status.values()]
  }

  stop(): Promise<void> {
    return this.loop.stop()
  }

  private async tick(): Promise<void> {
    const remotes = await listRemotes({dataDir: this.engine.dataDir})
    for (const name of this.status.keys()) if (!remotes.some((r) => r.name === name)) this.status.delete(name)
    if (remotes.length === 0) return
    try {
      await this.pushAll(remotes)
    } finally {
      recordSyncState(this.engine.dataDir, {push: this.statuses()})
    }
  }

  private async pushAll(remotes: Array<{name: string}>): Promise<void> {
    const heads = Object.fromEntries((await branchRefs(this.engine.repo)).map((r) => [r.name.slice(11), r.commit]))
    for (const r of remotes) {
      const st = this.status.get(r.name) ?? {failures: 0, pending: true, pushed: {}, remote: r.name}
      this.status.set(r.name, st)
      // A database with no commit yet has nothing to push (git would fail on an empty refspec match).
      if (Object.keys(heads).length === 0 && Object.keys(st.pushed).length === 0) {
        st.pending = false
        continue
      }
      st.pending = JSON.stringify(sorted(st.pushed)) !== JSON.stringify(sorted(heads)) || st.lastPushAt === undefined
      if (!st.pending) continue
      if (st.retryAt && Date.parse(st.retryAt) > Date.now()) continue
      try {
        await push(this.engine.repo, r.name)
        st.pushed = heads
        st.lastPushAt = new Date().toISOString()
        st.failures = 0
        st.retryAt = undefined
        st.pending = false
        this.log.debug('pushed', {remote: r.name})
      } catch (error) {
        st.failures++
        st.lastError = (error as Error).message
        st.lastErrorAt = new Date().toISOString()
        st.retryAt = new Date(Date.now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (st.failures - 1))).toISOString()
        this.log.warn('push failed; retrying with back-off', {error: st.lastError, failures: st.failures, remote: r.name, retryAt: st.retryAt})
      }
    }
  }
}

function sorted(o: Record<string, string>): Array<[string, string]> {
  return Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1))
}

function push(repo: string, remote: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-C', repo, 'push', '--quiet', '--prune', remote, '+refs/heads/*:refs/heads/*'], {env: gitEnv(), stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), PUSH_TIMEOUT_MS)
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve()
      else reject(new Error(`git push ${remote} failed: ${stderr.trim().split('\n').slice(-2).join('; ') || (signal ? `killed (${signal}) after ${PUSH_TIMEOUT_MS / 1000} s` : `exit ${code}`)}`))
    })
  })
}

/** Server hooks (servers/run.ts, servers/health.ts). */
export function startReplicator(engine: GitEngine, log: Logger): void {
  running = new Replicator(engine, log.child('svc.replication'))
}

export async function stopReplicator(): Promise<void> {
  await running?.stop()
  running = undefined
}

export function replicationHealthChecks(): Array<{component: string; remotes: RemoteStatus[]; status: 'ok' | 'warning'}> {
  const remotes = running?.statuses() ?? []
  if (remotes.length === 0) return []
  return [{component: 'replication', remotes, status: remotes.some((r) => r.failures > 0) ? 'warning' : 'ok'}]
}
