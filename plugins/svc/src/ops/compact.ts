import {readdirSync, statSync} from 'node:fs'
import {join} from 'node:path'

import {openEngine} from '../engine/index.js'
import {acquireInstanceLock} from '../engine/lock.js'
import {requireDataDir} from './data-dir.js'
import {explainDiskFull, run} from './proc.js'
import {callServer, liveServer} from './server-link.js'

export interface CompactResult {
  bytesAfter: number
  bytesBefore: number
  dataDir: string
  /** `gc`: full garbage collection (no server ran); `repack`: everything into one pack, beside a running server. */
  mode: 'gc' | 'repack'
  packsAfter: number
  packsBefore: number
}

function objectBytes(repo: string): {bytes: number; packs: number} {
  let bytes = 0
  let packs = 0
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, {withFileTypes: true})) {
      const p = join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else {
        if (e.name.endsWith('.pack')) packs++
        try {
          bytes += statSync(p).size
        } catch {
          // removed by git meanwhile
        }
      }
    }
  }
  walk(join(repo, 'objects'))
  return {bytes, packs}
}

/**
 * Inside the server (or on an engine this process opened): flush, then repack every object into
 * one pack through the engine, so the background repack and fast-import's packs are respected.
 */
export async function compactEngine(engine: {compact(): Promise<void>; dataDir: string; repo: string}): Promise<CompactResult> {
  const before = objectBytes(engine.repo)
  await engine.compact().catch(explainDiskFull)
  const after = objectBytes(engine.repo)
  return {bytesAfter: after.bytes, bytesBefore: before.bytes, dataDir: engine.dataDir, mode: 'repack', packsAfter: after.packs, packsBefore: before.packs}
}

/**
 * `toolkit svc compact`. With a server running it is asked to repack (safe: unreachable objects
 * are dropped from packs, nothing a commit in flight needs is touched). With none, the write-ahead
 * log is replayed first, then `git gc --prune=now` runs under the instance lock, which also drops
 * the objects of removed branches.
 */
export async function compact(options: {dataDir: string}): Promise<CompactResult> {
  const link = liveServer(options.dataDir)
  if (link) return callServer<CompactResult>(link, '/api/v1/compact', {})
  const {dataDir, repo} = requireDataDir(options.dataDir)
  const engine = await openEngine(dataDir, {fullText: false})
  await engine.close()
  const lock = acquireInstanceLock(dataDir)
  try {
    const before = objectBytes(repo)
    // --aggressive is gc's only way to repack with -f (recompute every delta: the background
    // roll-ups store objects without a delta search); its window kept at repack's default 10, not 250.
    await run('git', ['-C', repo, '-c', 'gc.aggressiveWindow=10', 'gc', '--aggressive', '--prune=now', '--quiet']).catch(explainDiskFull)
    const after = objectBytes(repo)
    return {bytesAfter: after.bytes, bytesBefore: before.bytes, dataDir, mode: 'gc', packsAfter: after.packs, packsBefore: before.packs}
  } finally {
    lock.release()
  }
}
