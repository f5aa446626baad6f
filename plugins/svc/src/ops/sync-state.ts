import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {writeFileAtomicSync} from '@toolkit/kit'

import {LAYOUT_NAMES} from '../engine/layout.js'
import type {FollowStatus} from './follower.js'
import type {RemoteStatus} from './replicator.js'

/**
 * What a running server last did with its Git remotes (`replication-state.json`, written only
 * by the server): the replicator's push status per remote, or the follower's fetch status. It
 * lets `toolkit svc diagnose`, which never contacts a remote, report last push / fetch, lag and
 * errors.
 */
export interface SyncState {
  follow?: FollowStatus
  pid: number
  push?: RemoteStatus[]
  updatedAt: string
}

export function syncStatePath(dataDir: string): string {
  return join(dataDir, LAYOUT_NAMES.replicationState)
}

const lastWritten = new Map<string, string>()

/** Records one side (push or follow) when it changed; atomic, so a reader never sees half a file. */
export function recordSyncState(dataDir: string, part: Pick<SyncState, 'follow' | 'push'>): void {
  const file = syncStatePath(dataDir)
  const body = JSON.stringify(part)
  if (lastWritten.get(file) === body) return
  lastWritten.set(file, body)
  const state: SyncState = {...readSyncState(dataDir), ...part, pid: process.pid, updatedAt: new Date().toISOString()}
  try {
    // Only status for diagnose and /health: not worth an fsync on every push.
    writeFileAtomicSync(file, `${JSON.stringify(state, null, 2)}\n`, {fsync: false})
  } catch {
    // A full disk must not stop replication itself; the next change tries again.
    lastWritten.delete(file)
  }
}

export function readSyncState(dataDir: string): SyncState | undefined {
  try {
    return JSON.parse(readFileSync(syncStatePath(dataDir), 'utf8')) as SyncState
  } catch {
    return undefined
  }
}
