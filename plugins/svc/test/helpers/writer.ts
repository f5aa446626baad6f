import type {ChildProcess} from 'node:child_process'
import type {Worker} from 'node:worker_threads'

import type {Engine} from '../../src/engine/index.js'

/**
 * Kills an open engine's Git writer the hard way, as a crash would: fast-import by SIGKILL, the
 * pack writer (SVC_WRITER=pack) by terminating its worker thread. Resolves once it is gone.
 */
export async function killWriter(db: Engine): Promise<void> {
  // The engine's private writer: tests reach in, no API exposes it.
  const writer = (db as unknown as {writer: {child?: ChildProcess; worker?: Worker}}).writer
  if (writer.worker) {
    await writer.worker.terminate()
    return
  }
  const child = writer.child!
  const gone = new Promise<void>((resolve) => child.once('close', () => resolve()))
  child.kill('SIGKILL')
  await gone
}
