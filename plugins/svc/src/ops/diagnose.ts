import {existsSync, readdirSync} from 'node:fs'
import {join} from 'node:path'

import {parseTrailers} from '../engine/commit-message.js'
import {FTS_FILE, inspectIndexFile} from '../engine/fts/store.js'
import {git} from '../engine/git.js'
import {findGitLocks, lockState, runningWriter, STALE_LOCK_MS} from '../engine/lock.js'
import {BlobReader} from '../engine/reader.js'
import {WriteAheadLog} from '../engine/wal.js'
import {requireDataDir} from './data-dir.js'
import {readSyncState} from './sync-state.js'

/** What works against a damaged repository (shown by diagnose; the same advice /health points to). */
export const REPAIR_ADVICE =
  'stop the server, keep a copy of the data directory, then restore it from the last backup (toolkit svc restore), or put the damaged documents again from a dump (toolkit svc dump of a good copy); re-run git fsck --full to confirm'

export type CheckLevel = 'error' | 'ok' | 'warning'

export interface DiagnoseCheck {
  check: 'branches' | 'git-locks' | 'index' | 'instance-lock' | 'remote' | 'replication' | 'repository' | 'wal'
  details?: Record<string, unknown>
  message: string
  status: CheckLevel
}

/**
 * Inspects a data directory without changing it: repository integrity (`git fsck --full`), the
 * instance lock and git lock files, branch configuration, the write-ahead log, the full-text
 * index files, and remote sync status (from the remote-tracking refs already fetched; diagnose
 * never contacts a remote).
 */
export async function diagnose(options: {dataDir: string; fsck?: boolean; indexDir?: string}): Promise<DiagnoseCheck[]> {
  const layout = requireDataDir(options.dataDir, {indexDir: options.indexDir})
  const {dataDir, repo} = layout
  const checks: DiagnoseCheck[] = []

  if (options.fsck !== false) {
    try {
      const {stdout} = await git(repo, ['fsck', '--full', '--no-progress', '--no-dangling'])
      const count = await git(repo, ['count-objects', '-v'])
      const stats = Object.fromEntries(count.stdout.trim().split('\n').map((l) => l.split(': ')).map(([k, v]) => [k, Number(v)]))
      checks.push({check: 'repository', details: {packs: stats.packs, 'size-pack-kb': stats['size-pack']}, message: stdout.trim() ? `git fsck: ${stdout.trim()}` : 'git fsck --full found no problems', status: stdout.trim() ? 'warning' : 'ok'})
    } catch (error) {
      // git fsck has no --repair: say what does work for a missing or corrupt object.
      checks.push({check: 'repository', message: `git fsck --full failed: ${(error as Error).message.trim()}; ${REPAIR_ADVICE}`, status: 'error'})
    }
  }

  const lock = lockState(dataDir)
  // A git fast-import still running with no server alive was left by a server killed with SIGKILL.
  const orphan = lock.alive ? undefined : runningWriter(dataDir)
  const orphanNote = orphan ? `; the git fast-import it left (pid ${orphan}) is still running, and the next start waits for it to end` : ''
  checks.push(
    !lock.present
      ? {check: 'instance-lock', details: orphan ? {writer: orphan} : undefined, message: `no server holds this data directory${orphanNote}`, status: orphan ? 'warning' : 'ok'}
      : lock.alive
        ? {check: 'instance-lock', details: {host: lock.host, pid: lock.pid}, message: `a server holds this data directory (pid ${lock.pid}${lock.sameHost ? '' : ` on ${lock.host}`})`, status: 'ok'}
        : {check: 'instance-lock', details: {pid: lock.pid, ...(orphan ? {writer: orphan} : {})}, message: `stale instance lock of pid ${lock.pid} (no such process); the next start takes it over${orphanNote}`, status: 'warning'},
  )

  const locks = findGitLocks(repo)
  const stale = locks.filter((l) => l.ageMs > STALE_LOCK_MS)
  checks.push({
    check: 'git-locks',
    details: {locks: locks.map((l) => ({ageSeconds: Math.round(l.ageMs / 1000), path: l.path}))},
    message: locks.length === 0 ? 'no git lock files' : `${locks.length} git lock file(s), ${stale.length} older than 60 s${stale.length > 0 && !lock.alive ? ' (removed at the next start)' : ''}`,
    status: stale.length > 0 ? 'warning' : 'ok',
  })

  const refs = await git(repo, ['for-each-ref', '--format=%(refname:strip=2) %(objectname)', 'refs/heads/'])
  const branches = refs.stdout.trim() ? refs.stdout.trim().split('\n').map((l) => l.split(' ')) : []
  const head = (await git(repo, ['symbolic-ref', '-q', 'HEAD']).catch(() => ({stdout: ''}))).stdout.trim()
  const reader = new BlobReader(repo)
  const headSeq = new Map<string, number>()
  const docCounts = new Map<string, number>()
  const branchProblems: string[] = []
  try {
    for (const [name, sha] of branches) {
      try {
        headSeq.set(name, parseTrailers((await reader.read(sha))?.toString('utf8') ?? '').seq ?? 0)
        const ls = await git(repo, ['ls-tree', '-r', '--name-only', sha])
        docCounts.set(name, ls.stdout.split('\n').filter((l) => l.endsWith('.json')).length)
      } catch (error) {
        branchProblems.push(`branch ${name} cannot be read: ${(error as Error).message}`)
      }
    }
  } finally {
    await reader.close()
  }
  if (head !== 'refs/heads/main') branchProblems.push(`HEAD points at ${head || 'nothing'}, expected refs/heads/main`)
  if (branches.length > 0 && !branches.some(([n]) => n === 'main')) branchProblems.push('the default branch main is missing')
  checks.push({
    check: 'branches',
    details: {branches: branches.map(([name, sha]) => ({documents: docCounts.get(name), head: sha, name})), head},
    message: branchProblems.length > 0 ? branchProblems.join('; ') : `${branches.length} branch(es): ${branches.map(([n]) => n).join(', ') || '(none yet)'}`,
    status: branchProblems.some((p) => p.includes('cannot be read')) ? 'error' : branchProblems.length > 0 ? 'warning' : 'ok',
  })

  if (existsSync(layout.wal)) {
    const entries = WriteAheadLog.read(layout.wal)
    const pending = entries.filter((e) => e.seq > (headSeq.get(e.branch) ?? 0))
    checks.push({
      check: 'wal',
      details: {entries: entries.length, 'pending-entries': pending.length, segments: readdirSync(layout.wal).filter((f) => f.endsWith('.log')).length},
      message: pending.length === 0 ? 'every logged write is in git' : `${pending.length} acknowledged write(s) not yet in git${lock.alive ? ' (the running server is applying them)' : '; they are replayed at the next start'}`,
      status: pending.length > 100 ? 'warning' : 'ok',
    })
  } else checks.push({check: 'wal', message: 'no write-ahead log yet', status: 'ok'})

  const indexDir = layout.index
  const indexDetails: Array<Record<string, unknown>> = []
  let indexBad = false
  for (const [name] of branches) {
    const file = join(indexDir, name, FTS_FILE)
    if (!existsSync(file)) {
      indexDetails.push({branch: name, state: 'missing (rebuilt at the next start)'})
      continue
    }
    try {
      const {documents} = inspectIndexFile(file)
      indexDetails.push({branch: name, documents, expected: docCounts.get(name), state: 'ok'})
    } catch (error) {
      indexBad = true
      indexDetails.push({branch: name, error: (error as Error).message, expected: docCounts.get(name), state: 'corrupt (rebuilt at the next start)'})
    }
  }
  checks.push({
    check: 'index',
    details: {branches: indexDetails, dir: indexDir},
    message: indexBad ? 'a full-text index file is corrupt; it is rebuilt from the repository at the next start' : 'full-text index files are readable',
    status: indexBad ? 'warning' : 'ok',
  })

  const remotes = (await git(repo, ['remote'])).stdout.trim().split('\n').filter(Boolean)
  if (remotes.length === 0) {
    checks.push({check: 'remote', message: 'no remote configured (sync not in use)', status: 'ok'})
  } else {
    const sync: Array<Record<string, unknown>> = []
    for (const remote of remotes) {
      for (const [name] of branches) {
        const tracking = `refs/remotes/${remote}/${name}`
        const has = (await git(repo, ['for-each-ref', '--format=%(objectname)', tracking])).stdout.trim()
        if (!has) {
          sync.push({branch: name, remote, state: 'never pushed or fetched'})
          continue
        }
        const [ahead, behind] = (await git(repo, ['rev-list', '--left-right', '--count', `refs/heads/${name}...${tracking}`])).stdout.trim().split(/\s+/).map(Number)
        sync.push({ahead, behind, branch: name, remote, state: ahead === 0 && behind === 0 ? 'in sync' : 'diverged'})
      }
    }
    const out = sync.filter((s) => s.state !== 'in sync')
    checks.push({check: 'remote', details: {remotes: sync}, message: out.length === 0 ? `in sync with ${remotes.join(', ')} (as of the last fetch)` : `${out.length} branch(es) differ from their remote-tracking refs (as of the last fetch)`, status: out.length === 0 ? 'ok' : 'warning'})
  }
  const sync = readSyncState(dataDir)
  if (sync) checks.push(replicationCheck(sync, lock.alive && lock.pid === sync.pid))
  return checks
}

/** The last push / fetch a server recorded (replication-state.json), since diagnose never contacts a remote. */
function replicationCheck(sync: NonNullable<ReturnType<typeof readSyncState>>, live: boolean): DiagnoseCheck {
  const when = live ? `recorded ${sync.updatedAt} by the running server (pid ${sync.pid})` : `recorded ${sync.updatedAt} by a server no longer running (pid ${sync.pid})`
  const parts: string[] = []
  let failing = false
  if (sync.follow) {
    const f = sync.follow
    failing ||= f.failures > 0
    parts.push(`follows ${f.remote}: last fetch ${f.lastFetchAt ?? 'never'}, lag ${f.lag} commit(s)${f.failures > 0 ? `, ${f.failures} failed fetch(es), last error: ${f.lastError}` : ''}`)
  }
  for (const p of sync.push ?? []) {
    failing ||= p.failures > 0
    parts.push(`pushes to ${p.remote}: last push ${p.lastPushAt ?? 'never'}${p.pending ? ', changes pending' : ''}${p.failures > 0 ? `, ${p.failures} failed push(es), last error: ${p.lastError}` : ''}`)
  }
  return {check: 'replication', details: {...sync}, message: `${parts.join('; ') || 'no remote in use'} (${when})`, status: failing ? 'warning' : 'ok'}
}
