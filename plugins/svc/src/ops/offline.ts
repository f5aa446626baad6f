import {existsSync} from 'node:fs'
import {join} from 'node:path'

import {parseTrailers} from '../engine/commit-message.js'
import type {Engine} from '../engine/types.js'
import {EngineError} from '../engine/errors.js'
import {git} from '../engine/git.js'
import {LAYOUT_NAMES} from '../engine/layout.js'
import {acquireInstanceLock, lockState} from '../engine/lock.js'
import {WriteAheadLog} from '../engine/wal.js'
import type {FlushSource} from './backup.js'
import {branchRefs} from './stage.js'

/**
 * Opens a data directory no server holds, for an operation that changes refs under the engine:
 * the first open replays acknowledged writes still in the write-ahead log and closes; the second
 * finds the log fully in Git and empties it, so no old log entry can be replayed later onto a
 * branch that the operation moved. The returned engine holds the instance lock until closed.
 */
export async function holdIdleDataDir(dataDir: string): Promise<Engine> {
  const lock = lockState(dataDir)
  if (lock.alive) throw new EngineError('locked', `a server (pid ${lock.pid}) is running on ${dataDir}; stop it first, or work on another --data-dir`)
  const {openEngine} = await import('../engine/index.js')
  const first = await openEngine(dataDir, {fullText: false})
  await first.close()
  return openEngine(dataDir, {fullText: false})
}

/** Rebuilds or catches up the full-text index of every branch, then closes. */
export async function reindexDataDir(dataDir: string): Promise<{documents: number; indexDocuments: number}> {
  const {openEngine} = await import('../engine/index.js')
  const engine = await openEngine(dataDir)
  try {
    await engine.reindex()
    const s = engine.stats()
    return {documents: s.documents, indexDocuments: s.indexDocuments}
  } finally {
    await engine.close()
  }
}

// The engine is imported where it is opened: loading it costs half a second, which a backup
// of a quiet data directory (read straight from Git) does not need to pay.

/**
 * A data directory no server holds whose write-ahead log holds nothing Git lacks (the usual
 * state after a clean shutdown): a backup or export can then read Git directly, without the
 * seconds an engine open spends loading every branch. Holds the instance lock until `release`,
 * so no server starts meanwhile. Undefined when the engine must replay the log or recover a
 * crash first (the caller then opens the engine).
 */
export async function quietSource(dataDir: string): Promise<(FlushSource & {release(): void}) | undefined> {
  const lock = acquireInstanceLock(dataDir)
  try {
    if (lock.previousCrashed) {
      lock.release()
      return undefined
    }
    const walDir = join(dataDir, LAYOUT_NAMES.wal)
    const entries = existsSync(walDir) ? WriteAheadLog.read(walDir) : []
    if (entries.length > 0) {
      const repo = join(dataDir, LAYOUT_NAMES.repo)
      const headSeq = new Map<string, number>()
      for (const r of await branchRefs(repo)) {
        const {stdout} = await git(repo, ['cat-file', 'commit', r.commit])
        headSeq.set(r.name.slice('refs/heads/'.length), parseTrailers(stdout).seq ?? 0)
      }
      if (entries.some((e) => e.seq > (headSeq.get(e.branch) ?? 0))) {
        lock.release()
        return undefined
      }
    }
    return {dataDir, flush: async () => {}, release: () => lock.release(), stable: true}
  } catch (error) {
    lock.release()
    throw error
  }
}
