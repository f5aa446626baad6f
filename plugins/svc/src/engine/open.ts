import {existsSync, mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {type BranchState, emptyBranch, loadBranchTree} from './branch-state.js'
import {parseTrailers} from './commit-message.js'
import {git} from './git.js'
import {DEFAULT_BRANCH} from './ids.js'
import {LAYOUT_NAMES} from './layout.js'
import {removeStaleGitLocks, waitForOrphanWriter} from './lock.js'
import {removeStaleTemps} from './pack-writer/pack-file.js'
import type {BlobReader} from './reader.js'
import type {Logger} from './types.js'

/**
 * The first steps of opening a data directory: the bare repository exists and is configured as
 * svc needs it, and after a crash the previous run's `git fast-import` has ended and its lock
 * files are gone, so nothing else writes to the repository.
 */
export async function prepareRepository(dataDir: string, repo: string, previousCrashed: boolean, log: Logger): Promise<void> {
  mkdirSync(dataDir, {recursive: true})
  if (!existsSync(join(repo, 'HEAD'))) {
    await git(dataDir, ['init', '--bare', '-q', LAYOUT_NAMES.repo])
    await git(repo, ['symbolic-ref', 'HEAD', `refs/heads/${DEFAULT_BRANCH}`])
  }
  // svc manages packing itself; git's object and ref fsyncs keep Git data durable before the WAL is trimmed.
  for (const [k, v] of [['gc.auto', '0'], ['core.fsync', 'objects,derived-metadata,reference'], ['core.fsyncMethod', 'fsync'], ['core.logAllRefUpdates', 'false']]) {
    await git(repo, ['config', k, v])
  }
  if (previousCrashed) {
    const orphan = await waitForOrphanWriter(dataDir, (pid) => log.warn('waiting for the git fast-import of the previous run to end', {pid}))
    if (orphan) log.warn('waited for the git fast-import of the previous run to end', {pid: orphan})
  }
  // Before the locks' sweep of tmp_*: the pack writer's temporary index names a pack it renamed
  // into place without its index (killed between the two renames), which goes too.
  for (const f of removeStaleTemps(join(repo, 'objects', 'pack'))) log.warn('removed a pack the pack writer left unfinished', {file: f})
  for (const p of removeStaleGitLocks(repo, previousCrashed)) log.warn('removed stale git lock file', {path: p})
}

/** Every branch and the commit its ref points at. */
export async function refHeads(repo: string): Promise<Map<string, string>> {
  const {stdout} = await git(repo, ['for-each-ref', '--format=%(refname:strip=2) %(objectname)', 'refs/heads/'])
  const m = new Map<string, string>()
  for (const line of stdout.split('\n')) {
    const [name, sha] = line.split(' ')
    if (name && sha) m.set(name, sha)
  }
  return m
}

export interface LoadedBranches {
  branches: Map<string, BranchState>
  /** The write-ahead-log sequence number of each branch's head commit (what Git already has). */
  headSeq: Map<string, number>
  /** Each branch's head commit, whose tree the branch's documents were loaded from. */
  heads: Map<string, string>
  /** The highest of them. */
  seq: number
}

/** Loads each branch's tree from Git into memory (ids, blob shas, expiries). */
export async function loadBranches(repo: string, reader: BlobReader, log: Logger, onExpiry: (branch: string, id: string, at: number) => void): Promise<LoadedBranches> {
  const heads = await refHeads(repo)
  const branches = new Map<string, BranchState>()
  const headSeq = new Map<string, number>()
  let seq = 0
  if (!heads.has(DEFAULT_BRANCH)) branches.set(DEFAULT_BRANCH, emptyBranch(DEFAULT_BRANCH, false))
  for (const [name, sha] of heads) {
    const state = emptyBranch(name, true)
    await loadBranchTree(repo, reader, state, sha, log, (id, at) => onExpiry(name, id, at))
    branches.set(name, state)
    const commit = await reader.read(sha)
    const s = parseTrailers(commit?.toString('utf8') ?? '').seq ?? 0
    headSeq.set(name, s)
    seq = Math.max(seq, s)
  }
  return {branches, heads, headSeq, seq}
}
