import {join} from 'node:path'

import {openEngine} from '../engine/index.js'
import {removeIndexDir} from '../engine/engine.js'
import {EngineError} from '../engine/errors.js'
import {validateBranch} from '../engine/ids.js'
import {requireDataDir} from './data-dir.js'
import {callServer, liveServer} from './server-link.js'

export interface RemoveBranchResult {
  dataDir: string
  /** The commit the branch pointed at (still reachable from a backup; `compact` drops its objects). */
  head: null | string
  name: string
  removed: true
}

/**
 * Removes a branch: its ref, its full-text index partition and its secondary indexes. `main`
 * (the default branch, HEAD) is refused. A running server is asked to do it.
 */
export async function removeBranch(options: {dataDir: string; name: string}): Promise<RemoveBranchResult> {
  const name = validateBranch(options.name)
  if (name === 'main') throw new EngineError('invalid_argument', 'the default branch main cannot be removed')
  const link = liveServer(options.dataDir)
  if (link) return callServer<RemoveBranchResult>(link, '/api/v1/remove-branch', {name})
  const {dataDir} = requireDataDir(options.dataDir)
  const engine = await openEngine(dataDir, {fullText: false})
  let head: null | string
  try {
    head = (await engine.branches()).find((b) => b.name === name)?.head ?? null
    await engine.removeBranch(name)
  } finally {
    await engine.close()
  }
  // The engine was opened without the full-text index, so its partition is removed here.
  removeIndexDir(join(dataDir, 'index', name))
  return {dataDir, head, name, removed: true}
}
