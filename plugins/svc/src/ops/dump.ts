import {createWriteStream, type WriteStream} from 'node:fs'
import {once} from 'node:events'

import {openEngine} from '../engine/index.js'
import {EngineError} from '../engine/errors.js'
import {git, gitStream} from '../engine/git.js'
import {classifyPath, idFromBody, validateBranch} from '../engine/ids.js'
import {lockState} from '../engine/lock.js'
import {BlobReader} from '../engine/reader.js'
import {requireDataDir} from './data-dir.js'

export interface DumpResult {
  branch: string
  /** Commit the dump reflects (null for an empty branch). */
  commit: null | string
  documents: number
  output: string
  /** Set when a running server still had acknowledged writes outside Git. */
  warning?: string
}

/**
 * Exports every current document of a branch as one JSON file:
 * `{"branch", "commit", "exportedAt", "documents": [...], "count"}`, streamed so memory stays flat.
 * With no server running, pending log entries are first replayed into Git, so the dump is
 * complete; while a server runs, the dump is the state Git holds (the server checkpoints within a second).
 */
export async function dumpDocuments(options: {branch?: string; dataDir: string; output: string}): Promise<DumpResult> {
  const {dataDir, repo} = requireDataDir(options.dataDir)
  const branch = validateBranch(options.branch ?? 'main')
  let warning: string | undefined
  const lock = lockState(dataDir)
  if (lock.alive) {
    warning = `a server (pid ${lock.pid}) is running on ${dataDir}: the dump holds what is committed to Git, which trails acknowledged writes by at most a second`
  } else {
    const engine = await openEngine(dataDir, {fullText: false})
    await engine.close()
  }
  const heads = await git(repo, ['for-each-ref', '--format=%(objectname)', `refs/heads/${branch}`])
  const commit = heads.stdout.trim() || null
  if (commit === null && branch !== 'main') throw new EngineError('branch_not_found', `branch ${branch} does not exist in ${dataDir}`)
  const out: NodeJS.WritableStream | WriteStream = options.output === '-' ? process.stdout : createWriteStream(options.output)
  const write = async (s: string): Promise<void> => {
    if (!out.write(s)) await once(out, 'drain')
  }
  await write(`{"branch":${JSON.stringify(branch)},"commit":${JSON.stringify(commit)},"exportedAt":${JSON.stringify(new Date().toISOString())},"documents":[`)
  let count = 0
  const missing: string[] = []
  if (commit !== null) {
    const entries: Array<{id: string; sha: string}> = []
    const hashed: string[] = []
    let rest = ''
    await gitStream(repo, ['ls-tree', '-r', '-z', commit], (chunk) => {
      const parts = (rest + chunk.toString('utf8')).split('\0')
      rest = parts.pop() ?? ''
      for (const line of parts) {
        const tab = line.indexOf('\t')
        const kind = classifyPath(line.slice(tab + 1))
        if (kind?.kind === 'doc') entries.push({id: kind.id, sha: line.slice(tab - 40, tab)})
        else if (kind?.kind === 'hashed') hashed.push(line.slice(tab - 40, tab))
      }
    })
    const reader = new BlobReader(repo)
    try {
      // Documents with very long ids are stored under a hashed name; their id is in the body.
      for (const sha of hashed) {
        const body = await reader.read(sha)
        const id = body && idFromBody(body)
        if (id) entries.push({id, sha})
        else missing.push(sha)
      }
      entries.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      // Reads are pipelined in windows so a large branch never sits in memory at once.
      for (let i = 0; i < entries.length; i += 1000) {
        const bodies = await Promise.all(entries.slice(i, i + 1000).map((e) => reader.read(e.sha)))
        for (const [j, body] of bodies.entries()) {
          if (body === undefined) {
            missing.push(`${entries[i + j].id} (object ${entries[i + j].sha})`)
            continue
          }
          await write(`${count === 0 ? '' : ','}\n${JSON.stringify(JSON.parse(body.toString('utf8')))}`)
          count++
        }
      }
    } finally {
      await reader.close()
    }
  }
  await write(`\n],"count":${count}}\n`)
  if (out !== process.stdout) {
    ;(out as WriteStream).end()
    await once(out, 'close')
  }
  if (missing.length > 0) {
    const note = `${missing.length} document(s) left out because their git object is missing: ${missing.slice(0, 5).join(', ')}; run toolkit svc diagnose`
    warning = warning ? `${warning}; ${note}` : note
  }
  return {branch, commit, documents: count, output: options.output, ...(warning ? {warning} : {})}
}
