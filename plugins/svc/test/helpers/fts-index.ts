import {expect} from 'chai'

import {FullTextIndex} from '../../src/engine/fulltext.js'
import {memoryLogger, tempDir} from './tmp.js'

/** A branch's documents as the engine would hand them to the index: body and blob id by id. */
export type Docs = Map<string, {body: Buffer; sha: string}>

/** A full-text index of branch `main` over `docs` in a new folder, open and ready. */
export async function openedIndex(docs: Docs, applyDelayMs: number): Promise<{dir: string; index: FullTextIndex}> {
  const dir = tempDir()
  const index = new FullTextIndex({
    applyDelayMs,
    batchSize: 1000,
    checkIntervalMs: 3_600_000,
    currentCount: () => docs.size,
    currentIds: () => docs.keys(),
    currentSha: (_branch, id) => docs.get(id)?.sha,
    dir,
    logger: memoryLogger().logger,
    readBody: async (_branch, id) => docs.get(id),
  })
  await index.open(['main'])
  const until = Date.now() + 30_000
  while (index.status('main').state !== 'ready' && Date.now() < until) await new Promise((r) => setTimeout(r, 10))
  expect(index.status('main').state).to.equal('ready')
  return {dir, index}
}
