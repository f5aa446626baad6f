import {openEngine} from '../engine/index.js'
import type {Engine} from '../engine/types.js'
import {EngineError} from '../engine/errors.js'
import {lockState} from '../engine/lock.js'

/**
 * Opens a data directory no server holds, for an operation that changes refs under the engine:
 * the first open replays acknowledged writes still in the write-ahead log and closes; the second
 * finds the log fully in Git and empties it, so no old log entry can be replayed later onto a
 * branch that the operation moved. The returned engine holds the instance lock until closed.
 */
export async function holdIdleDataDir(dataDir: string): Promise<Engine> {
  const lock = lockState(dataDir)
  if (lock.alive) throw new EngineError('locked', `a server (pid ${lock.pid}) is running on ${dataDir}; stop it first, or work on another --data-dir`)
  const first = await openEngine(dataDir, {fullText: false})
  await first.close()
  return openEngine(dataDir, {fullText: false})
}

/** Rebuilds or catches up the full-text index of every branch, then closes. */
export async function reindexDataDir(dataDir: string): Promise<{documents: number; indexDocuments: number}> {
  const engine = await openEngine(dataDir)
  try {
    await engine.reindex()
    const s = engine.stats()
    return {documents: s.documents, indexDocuments: s.indexDocuments}
  } finally {
    await engine.close()
  }
}
