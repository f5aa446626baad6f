import {randomBytes} from 'node:crypto'
import {existsSync, mkdirSync, renameSync, rmSync, statSync} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'

import type {Engine} from '../engine/types.js'
import {EngineError} from '../engine/errors.js'
import {git} from '../engine/git.js'
import {validateBranch} from '../engine/ids.js'
import type {FlushSource} from './backup.js'
import {readBundleHeader} from './bundle.js'
import {countDocuments} from './doc-count.js'
import {type BackupManifest, checkAgainstManifest, sha256File, writeManifest} from './manifest.js'
import {holdIdleDataDir, reindexDataDir} from './offline.js'
import {explainDiskFull, explainRefLock, run} from './proc.js'
import {stageRepository} from './stage.js'

export interface ExportSnapshotOptions {
  onProgress?: (text: string) => void
  output: string
  /** Branches (`dev` or `refs/heads/dev`); every branch when empty. */
  refs?: string[]
}

export interface ImportResult extends Omit<BackupManifest, 'path'> {
  dataDir: string
  /** Branches created or moved forward, with their commit. */
  imported: Array<{commit: string; name: string; previous: null | string}>
  input: string
}

function refName(r: string): string {
  const name = r.startsWith('refs/heads/') ? r.slice('refs/heads/'.length) : r
  validateBranch(name)
  return `refs/heads/${name}`
}

/** A self-contained Git bundle of chosen branches, at one consistent point (see stageRepository). */
export async function exportSnapshotFrom(source: FlushSource, options: ExportSnapshotOptions): Promise<BackupManifest> {
  if (typeof options.output !== 'string' || options.output === '') throw new EngineError('invalid_argument', 'a snapshot needs an output path')
  const output = resolve(options.output)
  if (existsSync(output)) throw new EngineError('invalid_argument', `${output} already exists; choose a new file name`)
  const wanted = [...new Set((options.refs ?? []).map((r) => refName(r)))]
  mkdirSync(dirname(output), {recursive: true})
  options.onProgress?.('flushing the write-ahead log and taking a consistent point')
  const stage = await stageRepository(source.dataDir, () => source.flush())
  const tmp = join(dirname(output), `.${basename(output)}.partial`)
  try {
    const missing = wanted.filter((w) => !stage.refs.some((r) => r.name === w))
    if (missing.length > 0) throw new EngineError('branch_not_found', `no such branch: ${missing.map((m) => m.slice(11)).join(', ')}`)
    const refs = wanted.length === 0 ? stage.refs : stage.refs.filter((r) => wanted.includes(r.name))
    if (refs.length === 0) throw new EngineError('not_found', 'the database has no branch with commits yet; nothing to export')
    options.onProgress?.(`writing ${output}`)
    await run('git', ['-C', stage.repo, 'bundle', 'create', '-q', tmp, ...refs.map((r) => r.name)]).catch(explainDiskFull)
    renameSync(tmp, output)
    const main = refs.find((r) => r.name === 'refs/heads/main') ?? refs[0]
    const documents = await countDocuments(source.dataDir, stage.repo, main.commit).catch(explainDiskFull)
    const manifest: BackupManifest = {
      base_commit: null,
      checksum: await sha256File(output),
      created_at: new Date().toISOString(),
      documents,
      format: 'bundle',
      kind: 'snapshot',
      path: output,
      refs,
      size: statSync(output).size,
      type: 'full',
    }
    writeManifest(manifest)
    return manifest
  } finally {
    rmSync(tmp, {force: true})
    stage.remove()
  }
}

interface Plan {
  header: ReturnType<typeof readBundleHeader>
  input: string
  manifest?: BackupManifest
  updates: Array<{commit: string; name: string; previous: null | string}>
}

/**
 * Checks a snapshot against a repository without changing any ref: the manifest's checksum
 * (when one is beside the file), `git bundle verify` (every prerequisite present), and which
 * branches it creates or moves forward. A branch that exists and is not an ancestor of the
 * bundle's commit would lose commits: refused.
 */
async function planImport(repo: string, file: string): Promise<Plan> {
  const input = resolve(file)
  if (!existsSync(input)) throw new EngineError('not_found', `snapshot file ${input} does not exist`)
  const manifest = await checkAgainstManifest(input)
  const header = readBundleHeader(input)
  if (header.refs.length === 0) throw new EngineError('invalid_argument', `${input} carries no branch (refs/heads/*) to import`)
  await run('git', ['-C', repo, 'bundle', 'verify', '-q', input]).catch((error: Error) => {
    throw new EngineError('invalid_argument', `${input} cannot be imported here: ${error.message.replace(/^git bundle failed: /, '')}`)
  })
  const updates: Plan['updates'] = []
  for (const r of header.refs) {
    validateBranch(r.name.slice(11))
    const current = (await git(repo, ['for-each-ref', '--format=%(objectname)', r.name])).stdout.trim() || null
    if (current === r.commit) continue
    updates.push({commit: r.commit, name: r.name, previous: current})
  }
  return {header, input, manifest, updates}
}

/** Fetches the bundle's objects under a private ref namespace, so nothing is visible until the refs move. */
async function fetchObjects(repo: string, plan: Plan, verify: boolean): Promise<string> {
  const ns = `refs/svc-import/${randomBytes(4).toString('hex')}`
  await run('git', ['-C', repo, ...(verify ? ['-c', 'fetch.fsckObjects=true'] : []), 'fetch', '-q', '--no-tags', plan.input, ...plan.header.refs.map((r) => `+${r.name}:${ns}/${r.name.slice(11)}`)]).catch(explainDiskFull)
  return ns
}

async function dropNamespace(repo: string, ns: string): Promise<void> {
  const {stdout} = await git(repo, ['for-each-ref', '--format=delete %(refname)', `${ns}/`])
  if (stdout.trim()) await git(repo, ['update-ref', '--stdin'], {input: stdout})
}

async function checkForward(repo: string, plan: Plan): Promise<void> {
  for (const u of plan.updates) {
    if (u.previous === null) continue
    const ff = await git(repo, ['merge-base', '--is-ancestor', u.previous, u.commit]).then(() => true, () => false)
    if (!ff) throw new EngineError('conflict', `branch ${u.name.slice(11)} exists and the snapshot's ${u.commit.slice(0, 12)} does not contain its head ${u.previous.slice(0, 12)}: importing would drop commits; remove the branch first (toolkit svc remove-branch --name ${u.name.slice(11)}) or import elsewhere`)
  }
}

function result(plan: Plan, dataDir: string, documents: number): ImportResult {
  return {
    base_commit: null,
    checksum: plan.manifest?.checksum ?? '',
    created_at: plan.manifest?.created_at ?? new Date().toISOString(),
    dataDir,
    documents,
    format: 'bundle',
    imported: plan.updates,
    input: plan.input,
    kind: 'snapshot',
    refs: plan.header.refs,
    size: statSync(plan.input).size,
    type: 'full',
  }
}

/**
 * Imports a snapshot into a data directory no server holds: verify, fetch the objects, move
 * every branch in one atomic ref transaction (new branches, or fast-forwards), reindex.
 */
export async function importSnapshotOffline(options: {dataDir: string; input: string; onProgress?: (t: string) => void; verify?: boolean}): Promise<ImportResult> {
  const dataDir = resolve(options.dataDir)
  const engine = await holdIdleDataDir(dataDir)
  const repo = join(dataDir, 'repo')
  let plan: Plan
  try {
    options.onProgress?.('verifying the snapshot')
    plan = await planImport(repo, options.input)
    await checkForward(repo, plan)
    if (plan.updates.length > 0) {
      options.onProgress?.('importing objects')
      const ns = await fetchObjects(repo, plan, options.verify === true)
      try {
        await git(repo, ['update-ref', '--stdin'], {input: `start\n${plan.updates.map((u) => `update ${u.name} ${u.commit} ${u.previous ?? '0'.repeat(40)}\n`).join('')}prepare\ncommit\n`})
      } finally {
        await dropNamespace(repo, ns)
      }
    }
  } finally {
    await engine.close()
  }
  options.onProgress?.('reindexing')
  const counts = await reindexDataDir(dataDir)
  return {...result(plan, dataDir, counts.documents), checksum: plan.manifest?.checksum ?? (await sha256File(plan.input))}
}

/**
 * The same inside a running server: only new branches, all or none (the engine loads every
 * branch, then creates their refs in one ref transaction, and indexes them in the background);
 * moving an existing branch needs the server stopped.
 */
export async function importSnapshotLive(engine: Engine, options: {input: string; verify?: boolean}): Promise<ImportResult> {
  const plan = await planImport(engine.repo, options.input)
  const existing = plan.updates.filter((u) => u.previous !== null)
  if (existing.length > 0) {
    throw new EngineError('conflict', `branch ${existing[0].name.slice(11)} already exists on this running server; import onto existing branches with the server stopped (toolkit svc import-snapshot), or remove the branch first`)
  }
  if (plan.updates.length > 0) {
    const ns = await fetchObjects(engine.repo, plan, options.verify === true)
    try {
      await engine.adoptBranches(plan.updates.map((u) => ({commit: u.commit, name: u.name.slice(11)}))).catch((error: Error) => {
        throw explainRefLock(error, 'nothing was imported', engine.repo)
      })
    } finally {
      await dropNamespace(engine.repo, ns)
    }
  }
  return {...result(plan, engine.dataDir, engine.stats().documents), checksum: plan.manifest?.checksum ?? (await sha256File(plan.input))}
}
