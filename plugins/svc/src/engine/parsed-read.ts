/**
 * Protocol-adapter helper (used by the Redis and PostgreSQL servers, not part of the engine core):
 * reads the current version of a document and reuses the parsed object while the stored bytes are
 * unchanged. `getRaw` returns the same Buffer for unchanged content (it comes from the engine's
 * blob cache), so a WeakMap keyed by that Buffer can never serve a stale document, and entries
 * disappear with the cache's buffers. Returned documents are frozen: callers copy before they
 * change anything.
 */
import type {BranchOption, Doc, Engine, GetManyOptions} from './types.js'

import {skipDamaged} from './errors.js'

const parsed = new WeakMap<Buffer, Doc>()

/**
 * What these helpers read through: the engine, or anything that serves its raw reads (a
 * transaction). The engine's own `getParsedIfCached` answers a hot id in one lookup.
 */
export type RawReader = Partial<Pick<Engine, 'getParsedIfCached'>> & Pick<Engine, 'getRaw' | 'getRawIfCached'>

/** The frozen document these bytes hold, the same object for the same Buffer. */
export function parseFrozen(buf: Buffer): Doc {
  let doc = parsed.get(buf)
  if (!doc) {
    doc = Object.freeze(JSON.parse(buf.toString('utf8')) as Doc)
    parsed.set(buf, doc)
  }
  return doc
}

export async function getParsed(engine: RawReader, id: string, options?: BranchOption): Promise<Doc | undefined> {
  const buf = await engine.getRaw(id, options)
  return buf ? parseFrozen(buf) : undefined
}

/** `getParsed` without waiting when the bytes are in memory; `false` when Git must be read. */
export function getParsedIfCached(engine: RawReader, id: string, options?: BranchOption): Doc | false | undefined {
  if (engine.getParsedIfCached !== undefined) return engine.getParsedIfCached(id, options)
  const buf = engine.getRawIfCached(id, options)
  return buf ? parseFrozen(buf) : buf
}

/**
 * Reads many documents; those in memory (and ids that do not exist) are answered without a promise
 * each, and the loop yields to the event loop every few milliseconds, so a statement naming a
 * million ids neither floods the heap with promises nor stalls other clients while it runs.
 * A damaged document reads as undefined and is named in `options.skipped`, as engine getMany does.
 */
export async function getManyParsed(engine: RawReader, ids: string[], options: GetManyOptions = {}): Promise<Array<Doc | undefined>> {
  const branch: BranchOption = {branch: options.branch}
  const out: Array<Doc | undefined> = Array.from({length: ids.length})
  const reads: Array<Promise<void>> = []
  // A failed read is kept, not left rejected while the loop yields (an unhandled rejection ends the process).
  let failure: {error: unknown} | undefined
  let since = performance.now()
  for (const [i, id] of ids.entries()) {
    const hit = getParsedIfCached(engine, id, branch)
    if (hit === false) {
      reads.push(getParsed(engine, id, branch).then(
        (d) => void (out[i] = d),
        (error: unknown) => {
          try {
            skipDamaged(error, options.skipped)
          } catch {
            failure ??= {error}
          }
        },
      ))
    } else out[i] = hit
    // Yield by time, not count: on a loaded machine a few thousand ids can take longer than the
    // latency other clients are promised.
    if (i % CHECK_EVERY === CHECK_EVERY - 1 && performance.now() - since > YIELD_AFTER_MS) {
      await new Promise((resolve) => setImmediate(resolve))
      since = performance.now()
    }
  }
  await Promise.all(reads)
  if (failure) throw failure.error
  return out
}

const CHECK_EVERY = 256
const YIELD_AFTER_MS = 4
