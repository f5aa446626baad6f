import {existsSync, mkdirSync, readdirSync} from 'node:fs'
import {resolve} from 'node:path'

import {EngineError} from '../engine/errors.js'
import {git} from '../engine/git.js'
import {validateBranch} from '../engine/ids.js'
import {lockState} from '../engine/lock.js'
import {requireDataDir} from './data-dir.js'
import {run} from './proc.js'

export interface ExportToDirectoryResult {
  branch: string
  commit: null | string
  documents: number
  output: string
  warning?: string
}

/**
 * Writes every current document of a branch as plain files into a directory, in the
 * repository's own layout (`<table>/<h1>/<h2>/<key>.json`, see docs/svc.md), with `git archive`.
 * While a server runs this is the state Git holds (at most about a second behind).
 */
export async function exportToDirectory(options: {branch?: string; dataDir: string; output: string}): Promise<ExportToDirectoryResult> {
  const {dataDir, repo} = requireDataDir(options.dataDir)
  const branch = validateBranch(options.branch ?? 'main')
  const output = resolve(options.output)
  if (existsSync(output) && readdirSync(output).length > 0) throw new EngineError('invalid_argument', `${output} is not empty; export into a new or empty directory`)
  const commit = (await git(repo, ['for-each-ref', '--format=%(objectname)', `refs/heads/${branch}`])).stdout.trim() || null
  if (commit === null && branch !== 'main') throw new EngineError('branch_not_found', `branch ${branch} does not exist in ${dataDir}`)
  mkdirSync(output, {recursive: true})
  let documents = 0
  if (commit) {
    await run('sh', ['-c', 'git -C "$0" archive --format=tar "$1" | tar -xf - -C "$2"', repo, commit, output])
    const {stdout} = await git(repo, ['ls-tree', '-r', '--name-only', commit])
    documents = stdout.split('\n').filter((l) => l.endsWith('.json')).length
  }
  const lock = lockState(dataDir)
  return {branch, commit, documents, output, ...(lock.alive ? {warning: `a server (pid ${lock.pid}) is running: the export holds what is committed to Git, which trails acknowledged writes by at most a second`} : {})}
}
