import {expect} from 'chai'
import {rmSync} from 'node:fs'
import {join} from 'node:path'

import {type Engine, openEngine} from '../src/engine/index.js'
import type {WriterKind} from '../src/engine/engine.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'
import {killWriter} from './helpers/writer.js'

/** The engine's record of what its Git writer has not checkpointed yet (private: tests reach in). */
type Unsent = Array<{branch?: unknown; seq?: number; spec?: unknown}>
const unsentOf = (db: Engine): Unsent => (db as unknown as {unsent: Unsent}).unsent

/**
 * A write's commit is kept until its checkpoint only as its write-ahead-log seq when the log
 * record alone makes it again; a restarted writer is sent those commits rebuilt from the log.
 * Killed at several points of a stream of every kind of write, it must end with every
 * acknowledged write in Git exactly once, in log order, and nothing else.
 */
describe('svc git writer restart: commits sent again from the write-ahead log', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('keeps a plain put or delete as its seq only, and the commit of an expiry whole', async () => {
    db = await openEngine(tempDir(), {checkpointDelayMs: 60_000, checkpointMaxDelayMs: 60_000, fullText: false})
    await db.put({id: 'k:1'})
    await db.delete('k:1')
    await db.put({id: 'k:2'})
    await db.expire('k:2', Date.now() + 3_600_000)
    // A put over a document with an expiry removes the expiry's file too: not rebuilt from the record alone.
    await db.put({id: 'k:2', v: 2})
    expect(unsentOf(db).map((u) => (u.spec ? 'spec' : u.seq === undefined ? '?' : 'seq'))).to.deep.equal(['seq', 'seq', 'seq', 'spec', 'spec'])
  })

  for (const writer of ['pack', 'fast-import'] as WriterKind[]) {
    it(`${writer}: killed at several points of a stream, every acknowledged write ends in git once, in order, one commit each`, async function () {
      this.timeout(120_000)
      const dir = tempDir()
      const repo = join(dir, 'repo')
      // Checkpoints far enough apart that each kill finds writes kept as a seq only; a small
      // back-pressure bound, so writes applied during a restart also ask for checkpoints at once.
      db = await openEngine(dir, {checkpointDelayMs: 150, checkpointMaxDelayMs: 300, fullText: false, maxPendingEntries: 64, writer})
      const engine = db
      /** The seqs of the acknowledged writes that return one, and how many writes were acknowledged in all. */
      const acked: number[] = []
      let commits = 0
      /** What each document must read after the stream: its last acknowledged write. */
      const model = new Map<string, null | Record<string, unknown>>()
      let stop = false
      const retrying = async (write: () => Promise<void>): Promise<void> => {
        for (;;) {
          try {
            return await write()
          } catch (error) {
            // Refused while the writer restarts: not acknowledged, tried again.
            if ((error as {code?: string}).code !== 'unavailable') throw error
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
        }
      }
      const writers = Array.from({length: 4}, async (_, w) => {
        for (let i = 0; !stop; i++) {
          const id = `s:${w}:${i % 40}`
          const doc = {i, id, w}
          if (i % 5 === 2) {
            const gone = `s:${w}:${(i + 13) % 40}`
            await retrying(async () => {
              const r = await engine.delete(gone)
              if (!r.existed) return
              acked.push(r.seq)
              commits++
              model.set(gone, null)
            })
          } else if (i % 5 === 3) {
            const docs = [doc, {i, id: `b:${w}:${i % 40}`, w}]
            await retrying(async () => {
              const rs = await engine.batch(docs.map((d) => ({doc: d, op: 'put' as const})))
              acked.push(rs[0].seq)
              commits++
              for (const d of docs) model.set(d.id, d)
            })
          } else {
            await retrying(async () => {
              const r = await engine.put(doc)
              acked.push(r.seq)
              commits++
              model.set(id, doc)
            })
            // Some documents get an expiry (its own commit), so later writes to them keep their whole spec.
            if (i % 5 === 4) {
              await retrying(async () => {
                if (await engine.expire(id, Date.now() + 3_600_000)) commits++
              })
            }
          }
        }
      })
      const seqOnly = (): number => unsentOf(engine).filter((u) => u.seq !== undefined).length
      const restarts: number[] = []
      for (const at of [60, 250, 500]) {
        while (commits < at) await new Promise((resolve) => setTimeout(resolve, 5))
        // Kill only a writer that is up, with writes it holds as a seq only.
        while (!engine.canWrite().ok || seqOnly() === 0) await new Promise((resolve) => setTimeout(resolve, 2))
        await killWriter(engine)
        const before = engine.details().writerRestarts
        while (engine.details().writerRestarts === before) await new Promise((resolve) => setTimeout(resolve, 5))
        restarts.push(engine.details().writerRestarts)
      }
      stop = true
      await Promise.all(writers)
      await engine.flush()
      expect(restarts).to.deep.equal([1, 2, 3])
      // One commit per acknowledged write, in log order, each acknowledged seq among them.
      const seqs = gitOut(repo, ['log', '--reverse', '--format=%(trailers:key=Svc-Seq,valueonly)', 'main'])
        .split('\n')
        .filter(Boolean)
        .map(Number)
      expect(seqs).to.have.length(commits)
      expect(seqs).to.deep.equal([...seqs].sort((a, b) => a - b))
      expect(new Set(seqs).size).to.equal(seqs.length)
      const inGit = new Set(seqs)
      expect(acked.filter((s) => !inGit.has(s))).to.deep.equal([])
      gitOut(repo, ['fsck', '--full'])
      await engine.close()
      db = undefined
      // Git alone (no write-ahead log to replay) holds every document's last acknowledged version.
      rmSync(join(dir, 'wal'), {force: true, recursive: true})
      db = await openEngine(dir, {fullText: false, writer})
      const ids = [...model.keys()]
      const got = await db.getMany(ids)
      expect(Object.fromEntries(ids.map((id, i) => [id, got[i] ?? null]))).to.deep.equal(Object.fromEntries(model))
    })
  }
})
