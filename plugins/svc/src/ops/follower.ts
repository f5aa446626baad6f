import type {Engine, Logger} from '../engine/types.js'
import {EngineError} from '../engine/errors.js'
import {git} from '../engine/git.js'
import {definitionsAt, parseDefinitions} from './index-definitions.js'
import {Periodic, retryAfter} from './periodic.js'
import {gitRemoteCommand} from './proc.js'
import {listRemotes} from './remotes.js'
import {branchRefs} from './stage.js'
import {recordSyncState} from './sync-state.js'

export interface FollowStatus {
  /** Branches whose local head differs from the leader's as of the last fetch. */
  behind: string[]
  failures: number
  /** Leader branch -> commit as of the last successful fetch. */
  heads: Record<string, string>
  lastError?: string
  lastErrorAt?: string
  lastFetchAt?: string
  /** Commits fetched but not yet served (0 once caught up). */
  lag: number
  remote: string
  retryAt?: string
}

const FETCH_TIMEOUT_MS = 120_000

let running: Follower | undefined

/** Where the follower keeps the leader's heads: a remote's own tracking namespace. */
function trackingPrefix(remote: string): string {
  return `refs/remotes/${/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(remote) ? remote : 'follow'}/`
}

/**
 * A read-only follower: every second it fetches every branch of its leader (a Git remote of
 * `data/repo`, or a URL), then points each local branch at the leader's head, creates new
 * branches and removes deleted ones, and the full-text index catches up on what changed. The
 * leader's secondary index definitions come along (index-definitions.ts) and are built here.
 * Clients' writes are refused (code `read_only`) for as long as the server follows.
 */
export class Follower {
  private readonly loop: Periodic
  private readonly state: FollowStatus
  /** The leader's index definitions as last applied here. */
  private definitions: string | undefined

  constructor(private readonly engine: Engine, private readonly remote: string, private readonly log: Logger, tickMs = 1000) {
    this.state = {behind: [], failures: 0, heads: {}, lag: 0, remote}
    engine.setReadOnly(`READONLY: this server is a read-only follower of ${remote}; send writes to the leader`)
    this.loop = new Periodic(() => this.tick(), {failure: 'follow pass failed', log, tickMs})
  }

  status(): FollowStatus {
    return {...this.state, behind: [...this.state.behind], heads: {...this.state.heads}}
  }

  stop(): Promise<void> {
    return this.loop.stop()
  }

  private async tick(): Promise<void> {
    try {
      await this.pass()
    } finally {
      recordSyncState(this.engine.dataDir, {follow: this.status()})
    }
  }

  private async pass(): Promise<void> {
    if (this.state.retryAt && Date.parse(this.state.retryAt) > Date.now()) return
    const prefix = trackingPrefix(this.remote)
    try {
      await fetchAll(this.engine.repo, this.remote, prefix)
      this.state.failures = 0
      this.state.retryAt = undefined
      this.state.lastFetchAt = new Date().toISOString()
    } catch (error) {
      this.state.failures++
      this.state.lastError = (error as Error).message
      this.state.lastErrorAt = new Date().toISOString()
      this.state.retryAt = retryAfter(this.state.failures)
      this.log.warn('fetch from the leader failed; retrying with back-off', {error: this.state.lastError, failures: this.state.failures, remote: this.remote, retryAt: this.state.retryAt})
      return
    }
    const {stdout} = await git(this.engine.repo, ['for-each-ref', '--format=%(objectname) %(refname)', prefix])
    const leader = new Map(stdout.split('\n').filter(Boolean).map((l) => {
      const [commit, ref] = l.split(' ')
      return [ref.slice(prefix.length), commit] as const
    }))
    leader.delete('HEAD')
    const local = new Map((await branchRefs(this.engine.repo)).map((r) => [r.name.slice('refs/heads/'.length), r.commit]))
    const changed = [...leader].filter(([name, commit]) => local.get(name) !== commit).map(([name]) => name)
    const removed = [...local.keys()].filter((name) => !leader.has(name) && name !== 'main')
    this.state.heads = Object.fromEntries(leader)
    this.state.behind = [...changed, ...removed]
    this.state.lag = await this.countLag(leader, local, changed)
    for (const name of changed) {
      await this.engine.followRef(name, leader.get(name)!)
      this.log.info('followed the leader', {branch: name, commit: leader.get(name)})
    }
    for (const name of removed) await this.engine.followRef(name, null)
    await this.followDefinitions(changed.length + removed.length > 0)
    this.state.behind = []
    this.state.lag = 0
  }

  /**
   * Builds the secondary indexes the leader defines (and drops the others) when its definitions
   * or the set of branches changed; a leader that publishes none leaves the local ones alone.
   */
  private async followDefinitions(branchesMoved: boolean): Promise<void> {
    const text = await definitionsAt(this.engine.repo, `${definitionsPrefix(this.remote)}index-definitions`)
    if (text === undefined || (text === this.definitions && !branchesMoved)) return
    await this.engine.followIndexes(parseDefinitions(text))
    if (text !== this.definitions) this.log.info('followed the leader\'s index definitions', {remote: this.remote})
    this.definitions = text
  }

  private async countLag(leader: Map<string, string>, local: Map<string, string>, changed: string[]): Promise<number> {
    if (changed.length === 0) return 0
    const {stdout} = await git(this.engine.repo, ['rev-list', '--count', ...changed.map((n) => leader.get(n)!), ...[...local.values()].map((c) => `^${c}`)]).catch(() => ({stdout: '0'}))
    return Number(stdout.trim()) || 0
  }
}

/** Where the follower keeps the leader's `refs/svc/*` (the index definitions). */
function definitionsPrefix(remote: string): string {
  return `refs/svc-follow/${/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(remote) ? remote : 'follow'}/`
}

/** `git fetch --prune` of every branch into the tracking namespace; a hung leader is cut off. */
function fetchAll(repo: string, remote: string, prefix: string): Promise<void> {
  return gitRemoteCommand(repo, ['fetch', '--quiet', '--prune', '--no-tags', remote, `+refs/heads/*:${prefix}*`, `+refs/svc/*:${definitionsPrefix(remote)}*`], FETCH_TIMEOUT_MS)
}

/**
 * Checks a `--follow` value before the server starts: a remote of the data directory's
 * repository, or a URL / path Git can fetch from.
 */
export async function checkFollowTarget(dataDir: string, remote: string): Promise<void> {
  if (typeof remote !== 'string' || remote.trim() === '' || remote.startsWith('-')) throw new EngineError('invalid_argument', `invalid --follow value ${JSON.stringify(remote)}: give a remote name (toolkit svc remote add) or a Git URL`)
  const names = (await listRemotes({dataDir}).catch(() => [])).map((r) => r.name)
  if (names.includes(remote) || /[:/]/.test(remote)) return
  throw new EngineError('invalid_argument', `--follow ${remote}: no remote of that name${names.length > 0 ? ` (remotes: ${names.join(', ')})` : ''}; add it with toolkit svc remote add ${remote} URL, or give a Git URL`)
}

/** Server hooks (servers/run.ts, servers/health.ts). */
export function startFollower(engine: Engine, remote: string, log: Logger): void {
  running = new Follower(engine, remote, log.child('svc.follow'))
}

export async function stopFollower(): Promise<void> {
  await running?.stop()
  running = undefined
}

export function followHealthChecks(): Array<{component: string; follow: FollowStatus; status: 'ok' | 'warning'}> {
  if (!running) return []
  const follow = running.status()
  return [{component: 'follow', follow, status: follow.failures > 0 || follow.lastFetchAt === undefined ? 'warning' : 'ok'}]
}
