import {existsSync} from 'node:fs'
import {join, resolve} from 'node:path'

import {EngineError} from '../engine/errors.js'

/** The repository of an existing svc data directory, or a clear error. */
export function requireDataDir(dataDir: string): {dataDir: string; repo: string} {
  const dir = resolve(dataDir)
  const repo = join(dir, 'repo')
  if (!existsSync(join(repo, 'HEAD'))) {
    throw new EngineError('not_found', `${dir} is not an svc data directory (no repo/ inside); pass --data-dir of a directory the server created`)
  }
  return {dataDir: dir, repo}
}
