import {randomBytes} from 'node:crypto'
import {existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync, statSync} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'

import {EngineError} from '../engine/errors.js'
import {git} from '../engine/git.js'
import {lockState} from '../engine/lock.js'
import {requireDataDir} from './data-dir.js'
import {detectFormat, readBundleHeader} from './bundle.js'
import {type BackupFormat, startManifestCheck} from './manifest.js'
import {holdIdleDataDir, reindexDataDir} from './offline.js'
import {explainDiskFull, run} from './proc.js'
import {branchRefs} from './stage.js'

export interface RestoreOptions {
  dataDir: string
  /** Replace a non-empty data directory; the old one is renamed aside, never deleted. */
  force?: boolean
  /** Checked against the file's contents when given. */
  format?: BackupFormat
  input: string
  onProgress?: (text: string) => void
}

export interface RestoreResult {
  base_commit: null | string
  checksum: string
  dataDir: string
  /** Documents on main after the restore; the full-text index holds `indexDocuments`. */
  documents: number
  format: BackupFormat
  indexDocuments: number
  /** Where `--force` moved the directory that was there before. */
  keptAside?: string
  refs: Array<{commit: string; name: string}>
  restored_at: string
  size: number
  type: 'full' | 'incremental'
}

/**
 * Restores a backup into a data directory no server holds. A full backup (tar.gz or bundle) goes
 * into a new or empty directory: it is unpacked beside it and checked (`git fsck
 * --connectivity-only`) before it takes the directory's name, so a failure leaves nothing half
 * restored. An incremental bundle applies on top of the directory its base was restored into.
 * The full-text index is rebuilt at the end.
 */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  const progress = options.onProgress ?? (() => {})
  const input = resolve(options.input)
  if (!existsSync(input)) throw new EngineError('not_found', `backup file ${input} does not exist`)
  const target = resolve(options.dataDir)
  const lock = lockState(target)
  if (lock.alive) throw new EngineError('locked', `a server (pid ${lock.pid}) is running on ${target}; stop it before restoring into it, or restore into a new --data-dir`)
  const format = detectFormat(input)
  if (options.format !== undefined && options.format !== format) throw new EngineError('invalid_argument', `${input} is a ${format} file, not ${options.format}`)
  progress('checking the backup file')
  const check = startManifestCheck(input)
  const {manifest} = check
  const header = format === 'bundle' ? readBundleHeader(input) : undefined
  const incremental = header !== undefined && header.prerequisites.length > 0
  let keptAside: string | undefined
  if (incremental) {
    // It changes the target in place: the file is checked before anything is applied.
    await check.verified
    await applyIncremental(target, input, header.prerequisites, progress)
  } else keptAside = await restoreFull(target, input, format, {force: options.force === true, progress, trusted: manifest !== undefined, verified: check.verified})
  const checksum = await check.checksum
  progress('rebuilding the full-text index')
  const counts = await reindexDataDir(target)
  const refs = await branchRefs(join(target, 'repo'))
  return {
    base_commit: incremental ? (manifest?.base_commit ?? header.prerequisites[0]) : null,
    checksum,
    dataDir: target,
    documents: counts.documents,
    format,
    indexDocuments: counts.indexDocuments,
    ...(keptAside ? {keptAside} : {}),
    refs: header && incremental ? header.refs.map((r) => refs.find((x) => x.name === r.name) ?? r) : refs,
    restored_at: new Date().toISOString(),
    size: statSync(input).size,
    type: incremental ? 'incremental' : 'full',
  }
}

async function restoreFull(target: string, input: string, format: BackupFormat, o: {force: boolean; progress: (t: string) => void; trusted: boolean; verified: Promise<void>}): Promise<string | undefined> {
  const {force, progress} = o
  const occupied = existsSync(target) && readdirSync(target).length > 0
  if (occupied && !force) {
    throw new EngineError('invalid_argument', `${target} is not empty; restore into a new directory, or pass --force to move the existing one aside (it is kept, never deleted)`)
  }
  mkdirSync(dirname(target), {recursive: true})
  const tmp = join(dirname(target), `.${basename(target)}.restoring-${randomBytes(4).toString('hex')}`)
  mkdirSync(tmp)
  try {
    progress(`unpacking ${input}`)
    // The file is hashed against its manifest while it unpacks into tmp; a damaged copy is
    // named as such even when the unpacking trips over the damage first.
    await unpackFull(tmp, input, format).catch(async (error: unknown) => {
      await o.verified
      throw error
    })
    await o.verified
    progress('checking the restored repository')
    await checkRestored(join(tmp, 'repo'), o.trusted).catch((error: Error) => {
      throw new EngineError('invalid_argument', `the restored repository is incomplete (${error.message}); the backup file is damaged, use another copy`)
    })
    let aside: string | undefined
    if (occupied) {
      aside = `${target}.before-restore-${new Date().toISOString().replaceAll(/[:.]/g, '-')}`
      renameSync(target, aside)
    } else if (existsSync(target)) rmdirSync(target)
    renameSync(tmp, target)
    return aside
  } catch (error) {
    rmSync(tmp, {force: true, recursive: true})
    throw error
  }
}

async function unpackFull(tmp: string, input: string, format: BackupFormat): Promise<void> {
  if (format === 'tar.gz') {
    // GNU tar strips leading slashes and skips members with `..`, so nothing lands outside tmp.
    await run('tar', ['-xzf', input, '-C', tmp, '--no-same-owner']).catch(explainDiskFull)
    if (!existsSync(join(tmp, 'repo', 'HEAD'))) throw new EngineError('invalid_argument', `${input} holds no svc repository (no repo/HEAD inside)`)
    return
  }
  await git(tmp, ['init', '--bare', '-q', 'repo'])
  const repo = join(tmp, 'repo')
  await git(repo, ['symbolic-ref', 'HEAD', 'refs/heads/main'])
  // `git bundle unbundle` indexes the bundle's pack and names its refs; the refs are then
  // created in one transaction. `git fetch` from the bundle would do the same and then walk
  // every object for connectivity (36 s of 65 s for 105k commits); checkRestored decides how
  // much checking the file needs.
  const listed = await run('git', ['-C', repo, 'bundle', 'unbundle', input]).catch(explainDiskFull)
  const refs = listed.split('\n').map((l) => l.split(' ')).filter(([commit, name]) => /^[0-9a-f]{40}$/.test(commit) && name?.startsWith('refs/heads/'))
  if (refs.length === 0) throw new EngineError('invalid_argument', `${input} carries no branch`)
  await git(repo, ['update-ref', '--stdin'], {input: `start\n${refs.map(([commit, name]) => `create ${name} ${commit}\n`).join('')}prepare\ncommit\n`}).catch((error: Error) => {
    throw new EngineError('invalid_argument', `the restored repository is incomplete (${error.message}); the backup file is damaged, use another copy`)
  })
}

/**
 * A file whose SHA-256 matched its manifest is byte for byte what the backup wrote from a
 * consistent point, so the tips and their trees are checked (the reindex then reads every current
 * document); without a manifest nothing vouches for the file, and every commit's connectivity
 * is walked (`git fsck --connectivity-only`, seconds per 100k commits).
 */
async function checkRestored(repo: string, verified: boolean): Promise<void> {
  if (!verified) {
    await run('git', ['-C', repo, 'fsck', '--connectivity-only', '--no-progress', '--no-dangling'])
    return
  }
  const refs = await branchRefs(repo)
  if (refs.length === 0) return
  await git(repo, ['cat-file', '--batch-check'], {input: refs.flatMap((r) => [r.commit, `${r.commit}^{tree}`]).join('\n') + '\n'}).then(({stdout}) => {
    const missing = stdout.split('\n').find((l) => l.endsWith(' missing'))
    if (missing) throw new Error(`object ${missing.split(' ')[0]} is missing`)
  })
}

async function applyIncremental(target: string, input: string, prerequisites: string[], progress: (t: string) => void): Promise<void> {
  try {
    requireDataDir(target)
  } catch {
    throw new EngineError('not_found', `${input} is an incremental backup: it applies on top of its base (commit ${prerequisites[0].slice(0, 12)}), and ${target} holds no svc data; restore the full backup into it first, then each incremental in order`)
  }
  const engine = await holdIdleDataDir(target)
  try {
    const repo = join(target, 'repo')
    const missing: string[] = []
    for (const c of prerequisites) {
      const ok = await git(repo, ['cat-file', '-e', `${c}^{commit}`]).then(() => true, () => false)
      if (!ok) missing.push(c)
    }
    if (missing.length > 0) {
      throw new EngineError('not_found', `${input} is an incremental backup whose base commit ${missing[0]} is missing from ${target}: restore the full backup and every earlier incremental first, in order`)
    }
    progress(`applying ${input}`)
    await run('git', ['-C', repo, 'bundle', 'verify', '-q', input])
    await run('git', ['-C', repo, 'fetch', '-q', '--atomic', input, '+refs/heads/*:refs/heads/*']).catch(explainDiskFull)
  } finally {
    await engine.close()
  }
}
