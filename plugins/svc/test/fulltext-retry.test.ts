import {expect} from 'chai'

import {FullTextIndex} from '../src/engine/fulltext.js'
import {cleanupTempDirs, memoryLogger, tempDir} from './helpers/tmp.js'

/**
 * A catch-up that fails for a reason other than corruption (here the branch's document list
 * cannot be walked twice in a row, as when a Git read fails) is tried again after a short wait,
 * backing off, instead of leaving the index behind until the next hourly check.
 */
describe('svc full-text index: a failed catch-up is tried again', () => {
  after(cleanupTempDirs)

  it('reaches ready by itself after two failures, logging each with its next wait', async () => {
    const docs = new Map([['notes:1', {body: Buffer.from('{"text":"hello retried world"}'), sha: 'a'.repeat(40)}]])
    let failures = 2
    const {lines, logger} = memoryLogger()
    const index = new FullTextIndex({
      batchSize: 100,
      checkIntervalMs: 3_600_000,
      currentCount: () => docs.size,
      currentIds: () => {
        if (failures > 0) {
          failures--
          throw new Error('git cat-file exited')
        }
        return docs.keys()
      },
      currentSha: (_branch, id) => docs.get(id)?.sha,
      dir: tempDir(),
      logger,
      readBody: async (_branch, id) => docs.get(id),
      retryMs: 20,
    })
    try {
      await index.open(['main'])
      const until = Date.now() + 10_000
      while (index.status('main').state !== 'ready' && Date.now() < until) await new Promise((r) => setTimeout(r, 10))
      expect(index.status('main').state).to.equal('ready')
      expect(index.search('main', 'retried', {limit: 10, offset: 0}).ids.map((h) => h.id)).to.deep.equal(['notes:1'])
      const failed = lines.map((l) => JSON.parse(l) as {msg?: string; message?: string; retryInMs?: number}).filter((l) => (l.msg ?? l.message ?? '').includes('reindex failed'))
      expect(failed.map((l) => l.retryInMs)).to.deep.equal([20, 40])
    } finally {
      await index.close()
    }
  })
})
