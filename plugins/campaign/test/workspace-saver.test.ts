import {expect} from 'chai'
import {mkdirSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {setImmediate as turn} from 'node:timers/promises'

import {WorkspaceSaver} from '../src/run/workspace-saver.js'
import type {Workspace} from '../src/types.js'
import {tempDir} from './helpers.js'

describe('WorkspaceSaver (saves while missions run)', () => {
  const onDisk = (dir: string) => JSON.parse(readFileSync(join(dir, 'workspace.json'), 'utf8')) as {n: number}

  it('each save resolves only once a snapshot taken after its call is on disk, however the calls interleave', async () => {
    const dir = tempDir()
    const ws = {account: {brand_kit: null, campaigns: []}, input: {}, missions: {}, n: 0, version: 1}
    const saver = new WorkspaceSaver(dir, ws as unknown as Workspace)
    const behind: string[] = []
    const saves: Array<Promise<void>> = []
    for (let i = 1; i <= 60; i++) {
      ws.n = i
      saves.push(saver.save().then(() => void (onDisk(dir).n < i && behind.push(`save ${i} resolved with ${onDisk(dir).n} on disk`))))
      // Some changes come in the same turn, some while a write is under way.
      if (i % 7 === 0) await turn()
    }
    await Promise.all(saves)
    expect(behind).to.deep.equal([])
    await saver.idle()
    expect(onDisk(dir).n).to.equal(60)
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp')), 'temporary files left behind').to.deep.equal([])
  })

  it('a failed write rejects the saves waiting for it, and the next save writes again', async () => {
    const dir = join(tempDir(), 'gone')
    const ws = {n: 1, version: 1}
    const saver = new WorkspaceSaver(dir, ws as unknown as Workspace)
    let error: unknown = null
    await saver.save().catch((e: unknown) => (error = e))
    expect(String(error)).to.match(/ENOENT/)
    await saver.idle()
    mkdirSync(dir)
    ws.n = 2
    await saver.save()
    expect(onDisk(dir).n).to.equal(2)
  })
})
