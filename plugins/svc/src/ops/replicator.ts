import {stat} from 'node:fs/promises'
import {join} from 'node:path'

import {EngineError} from '../engine/errors.js'
import type {Engine, Logger} from '../engine/types.js'
import {publishDefinitions} from './index-definitions.js'
import {Periodic, retryAfter} from './periodic.js'
import {gitStream} from '../engine/git.js'
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

const PUSH_TIMEOUT_MS = 120_000

let running: Replicator | undefined

/**
 * Pushes every branch to each Git remote of the repository whenever the heads change (checked
 * every second), with `--prune` so removed branches go too and `+` so the remote mirrors this
 * database. A failed push is retried with exponential back-off (1 s, 2 s, ... 60 s); nothing is
 * lost meanwhile, since a push sends everything the remote lacks. The secondary index
 * definitions travel too, on DEFINITIONS_REF (see index-definitions.ts).
 */
export class Replicator {
  private readonly loop: Periodic
  private status = new Map<string, RemoteStatus>()
  /** The index definitions last published to DEFINITIONS_REF, and last pushed to each remote. */
  private definitions: string | undefined
  private pushedDefinitions = new Map<string, string>()
  /** The remotes as of the repository config's last change (see currentRemotes). */
  private remotes?: {config: string; list: Array<{name: string}>}

  constructor(private readonly engine: Engine, private readonly log: Logger, tickMs = 1000) {
    this.loop = new Periodic(() => this.tick(), {failure: 'replication check failed', log, tickMs})
  }

  statuses(): RemoteStatus[] {
    return [...this.status.values()]
  }

  stop(): Promise<void> {
    return this.loop.stop()
  }

  private async tick(): Promise<void> {
    // Published even without remotes: a follower may fetch from this repository directly.
    this.definitions = await publishDefinitions(this.engine.dataDir, this.engine.repo, this.definitions)
    const remotes = await this.currentRemotes()
    for (const name of this.status.keys()) if (!remotes.some((r) => r.name === name)) this.status.delete(name)
    if (remotes.length === 0) return
    try {
      await this.pushAll(remotes)
    } finally {
      recordSyncState(this.engine.dataDir, {push: this.statuses()})
    }
  }

  /**
   * Asking git is a process spawn, which stalls the event loop (every client's requests) for tens
   * to hundreds of ms on a loaded machine; so git is asked only when the config file has changed.
   */
  private async currentRemotes(): Promise<Array<{name: string}>> {
    const st = await stat(join(this.engine.repo, 'config')).catch(() => undefined)
    const config = st ? `${st.ino}:${st.size}:${st.mtimeMs}` : ''
    if (!st || this.remotes?.config !== config) this.remotes = {config, list: await listRemotes({dataDir: this.engine.dataDir})}
    return this.remotes.list
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
      st.pending = JSON.stringify(sorted(st.pushed)) !== JSON.stringify(sorted(heads)) || st.lastPushAt === undefined || this.pushedDefinitions.get(r.name) !== this.definitions
      if (!st.pending) continue
      if (st.retryAt && Date.parse(st.retryAt) > Date.now()) continue
      try {
        await push(this.engine.repo, r.name)
        st.pushed = heads
        if (this.definitions !== undefined) this.pushedDefinitions.set(r.name, this.definitions)
        st.lastPushAt = new Date().toISOString()
        st.failures = 0
        st.retryAt = undefined
        st.pending = false
        this.log.debug('pushed', {remote: r.name})
      } catch (error) {
        st.failures++
        st.lastError = (error as Error).message
        st.lastErrorAt = new Date().toISOString()
        st.retryAt = retryAfter(st.failures)
        this.log.warn('push failed; retrying with back-off', {error: st.lastError, failures: st.failures, remote: r.name, retryAt: st.retryAt})
      }
    }
  }
}

function sorted(o: Record<string, string>): Array<[string, string]> {
  return Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1))
}

/**
 * Through the engine's git helper process (engine/git-spawner.ts), like every git command of the
 * polling loop: a push once a second while writes arrive would otherwise fork the server each time.
 * Killed after PUSH_TIMEOUT_MS so a hung network cannot hold the loop that runs it.
 */
async function push(repo: string, remote: string): Promise<void> {
  const timeout = AbortSignal.timeout(PUSH_TIMEOUT_MS)
  try {
    await gitStream(repo, ['push', '--quiet', '--prune', remote, '+refs/heads/*:refs/heads/*', '+refs/svc/*:refs/svc/*'], () => {}, timeout, `git push ${remote}`)
  } catch (error) {
    if (timeout.aborted) throw new EngineError('unavailable', `git push ${remote} failed: killed after ${PUSH_TIMEOUT_MS / 1000} s`)
    throw error
  }
}

/** Server hooks (servers/run.ts, servers/health.ts). */
export function startReplicator(engine: Engine, log: Logger): void {
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
