import {spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'
import {Transform} from 'node:stream'
import {pipeline} from 'node:stream/promises'
import {createGzip} from 'node:zlib'

import {EngineError} from '../engine/errors.js'
import {git, gitEnv} from '../engine/git.js'
import {LAYOUT_NAMES} from '../engine/layout.js'
import {readBundleHeader} from './bundle.js'
import {countDocuments} from './doc-count.js'
import {type BackupFormat, type BackupManifest, writeManifest} from './manifest.js'
import {explainDiskFull} from './proc.js'
import {branchRefs, stageRepository, type StagedRepo} from './stage.js'

export interface BackupOptions {
  /** Makes an incremental bundle of what came after this commit (bundle format only). */
  baseCommit?: string
  /** `tar.gz` (default): the repository as an archive; `bundle`: a Git bundle of every branch. */
  format?: BackupFormat
  onProgress?: (text: string) => void
  /** The backup file; it must not exist yet. `<output>.manifest.json` is written beside it. */
  output: string
}

/** What a backup needs from the engine: a data directory and a way to put acknowledged writes into Git. */
export interface FlushSource {
  readonly dataDir: string
  flush(): Promise<void>
  /** The engine's own counts, when one is open: saves walking main's tree for the manifest. */
  stats?(): {documents: number}
  /**
   * Set when nothing can write to the repository while the source is held (a data directory
   * no server holds, under this process's instance lock): a bundle is then made from the
   * repository itself, without a staged copy.
   */
  readonly stable?: boolean
}

export function checkBackupOptions(o: BackupOptions): {format: BackupFormat; output: string} {
  const format = o.format ?? 'tar.gz'
  if (format !== 'tar.gz' && format !== 'bundle') throw new EngineError('invalid_argument', `unknown backup format ${JSON.stringify(format)}: use tar.gz or bundle`)
  if (o.baseCommit !== undefined && format !== 'bundle') throw new EngineError('invalid_argument', 'an incremental backup (--base-commit) is a Git bundle: add --format bundle')
  if (o.baseCommit !== undefined && !/^[0-9a-f]{4,40}$/.test(o.baseCommit)) throw new EngineError('invalid_argument', `invalid base commit ${JSON.stringify(o.baseCommit)}: give a commit id (hex)`)
  if (typeof o.output !== 'string' || o.output === '') throw new EngineError('invalid_argument', 'a backup needs an output path')
  const output = resolve(o.output)
  if (existsSync(output)) throw new EngineError('invalid_argument', `${output} already exists; choose a new file name (backups are never overwritten)`)
  return {format, output}
}

/**
 * A full or incremental backup of a running (or just opened) engine's data directory, at one
 * consistent point: every write acknowledged before the call is included (the write-ahead log
 * is flushed into Git first), and writes continue meanwhile (see stageRepository).
 */
export async function backupDataDir(source: FlushSource, options: BackupOptions): Promise<BackupManifest> {
  const {format, output} = checkBackupOptions(options)
  const progress = options.onProgress ?? (() => {})
  mkdirSync(dirname(output), {recursive: true})
  progress('flushing the write-ahead log and taking a consistent point')
  let documents: number | undefined
  // The base commit is looked up in the live repository while the stage is made (it is there
  // already, or the backup fails), so its lookup adds nothing to the backup's time.
  const baseResolved = options.baseCommit === undefined || format !== 'bundle' ? Promise.resolve(undefined) : resolveCommit(join(source.dataDir, LAYOUT_NAMES.repo), options.baseCommit)
  baseResolved.catch(() => {})
  const flush = async (): Promise<void> => {
    await source.flush()
    documents = source.stats?.().documents
  }
  // A staged copy keeps a live repository's point fixed while a server commits and repacks; a
  // repository nobody can change is that point already, and a bundle (which carries only the
  // branches and what they reach) needs no copy of it. A tar.gz archives files, so it is always
  // made from a staged copy holding exactly the branches.
  const stage = source.stable && format === 'bundle' ? await unstaged(source.dataDir, flush) : await stageRepository(source.dataDir, flush)
  const tmp = join(dirname(output), `.${basename(output)}.partial`)
  try {
    // Counting main's documents walks its tree: done beside the archive, not after it.
    const main = stage.refs.find((r) => r.name === 'refs/heads/main')
    const counted = documents !== undefined || !main ? Promise.resolve(documents ?? 0) : countDocuments(source.dataDir, stage.repo, main.commit).catch(explainDiskFull)
    counted.catch(() => {})
    let refs = stage.refs
    let checksum: string
    if (format === 'tar.gz') {
      progress(`writing ${output}`)
      checksum = await writeTarGz(stage, tmp).catch(explainDiskFull)
    } else {
      progress(`writing ${output}`)
      // Git resolves the base itself, so the bundle starts at once; the lookup above, made
      // meanwhile, names the commit in the manifest and explains a base that is not there.
      const given = options.baseCommit
      checksum = await writeHashed('git', ['-C', stage.repo, 'bundle', 'create', '-q', '-', '--branches', ...(given ? [`^${given}`] : [])], tmp, false).catch(async (error: Error) => {
        await baseResolved
        if (given && /empty bundle/.test(error.message)) throw new EngineError('not_found', `nothing was written after base commit ${given}; no incremental backup is needed`)
        return explainDiskFull(error)
      })
      const base = await baseResolved
      refs = readBundleHeader(tmp).refs
      options = {...options, baseCommit: base}
    }
    const documentCount = await counted
    renameSync(tmp, output)
    const manifest: BackupManifest = {
      base_commit: options.baseCommit ?? null,
      checksum,
      created_at: new Date().toISOString(),
      documents: documentCount,
      format,
      kind: 'backup',
      path: output,
      refs,
      size: statSync(output).size,
      type: options.baseCommit === undefined ? 'full' : 'incremental',
    }
    writeManifest(manifest)
    return manifest
  } finally {
    rmSync(tmp, {force: true})
    stage.remove()
  }
}

/**
 * `tar` (or `git bundle create -`) writes to a pipe and this process hashes the bytes on their
 * way to the file: one pass, no second read for the checksum. Git's packs are already deflated,
 * so gzip's fastest level loses almost nothing in size and saves most of its time.
 */
function writeHashed(cmd: string, args: string[], file: string, gzip: boolean): Promise<string> {
  const child = spawn(cmd, args, {env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe']})
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new EngineError('internal', `${cmd === 'git' ? 'git bundle' : cmd} failed: ${stderr.trim().split('\n').slice(-3).join('; ') || `exit ${code}`}`))))
  })
  const hash = createHash('sha256')
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk)
      cb(null, chunk)
    },
  })
  const stages = gzip ? pipeline(child.stdout, createGzip({level: 1}), hashing, createWriteStream(file)) : pipeline(child.stdout, hashing, createWriteStream(file))
  // Whichever fails first names the cause: a full disk fails the file before the program
  // sees its broken pipe; a program's own error (an empty bundle) ends a complete pipe.
  return Promise.all([done, stages]).then(
    () => hash.digest('hex'),
    (error: unknown) => {
      child.kill()
      throw error
    },
  )
}

function writeTarGz(stage: StagedRepo, file: string): Promise<string> {
  const members = [...['indexes.json'].filter((m) => existsSync(join(stage.dir, m))), 'repo']
  return writeHashed('tar', ['-cf', '-', '-C', stage.dir, ...members], file, true)
}

/** The repository itself as the point to back up (see FlushSource.stable). */
async function unstaged(dataDir: string, flush: () => Promise<void>): Promise<StagedRepo> {
  await flush()
  const repo = join(dataDir, LAYOUT_NAMES.repo)
  return {dir: dataDir, refs: await branchRefs(repo), remove: () => {}, repo}
}

export async function resolveCommit(repo: string, commit: string): Promise<string> {
  try {
    return (await git(repo, ['rev-parse', '--verify', '--quiet', `${commit}^{commit}`])).stdout.trim()
  } catch {
    throw new EngineError('not_found', `base commit ${commit} is not in this repository; give a commit of an earlier backup's manifest (its refs)`)
  }
}

