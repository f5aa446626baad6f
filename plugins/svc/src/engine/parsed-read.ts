/**
 * Protocol-adapter helper (added by the Redis/PostgreSQL servers, not part of the engine core):
 * reads the current version of a document and reuses the parsed object while the stored bytes are
 * unchanged. Engines that expose `getRaw` (GitEngine) return the same Buffer for unchanged content
 * (it comes from their blob cache), so a WeakMap keyed by that Buffer can never serve a stale
 * document, and entries disappear with the cache's buffers. Engines without `getRaw` fall back to
 * `get`. Returned documents are frozen: callers copy before they change anything.
 */
import type {BranchOption, Doc, Engine} from './types.js'

interface RawReader {
  getRaw(id: string, options?: BranchOption): Promise<Buffer | undefined>
}

const parsed = new WeakMap<Buffer, Doc>()

function rawReader(engine: Engine): RawReader | undefined {
  return typeof (engine as Partial<RawReader>).getRaw === 'function' ? (engine as unknown as RawReader) : undefined
}

function parse(buf: Buffer): Doc {
  let doc = parsed.get(buf)
  if (!doc) {
    doc = Object.freeze(JSON.parse(buf.toString('utf8')) as Doc)
    parsed.set(buf, doc)
  }
  return doc
}

export async function getParsed(engine: Engine, id: string, options?: BranchOption): Promise<Doc | undefined> {
  const raw = rawReader(engine)
  if (!raw) return engine.get(id, options)
  const buf = await raw.getRaw(id, options)
  return buf ? parse(buf) : undefined
}

export async function getManyParsed(engine: Engine, ids: string[], options?: BranchOption): Promise<Array<Doc | undefined>> {
  if (!rawReader(engine)) return engine.getMany(ids, options)
  return Promise.all(ids.map((id) => getParsed(engine, id, options)))
}
