import {spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {closeSync, createWriteStream, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'
import {Transform} from 'node:stream'
import {pipeline} from 'node:stream/promises'

import {EngineError} from '../engine/errors.js'
import {git, gitEnv} from '../engine/git.js'
import {LAYOUT_NAMES} from '../engine/layout.js'
import {readBundleHeader} from './bundle.js'
import {countDocuments} from './doc-count.js'
import {type BackupFormat, type BackupManifest, sha256File, writeManifest} from './manifest.js'
import {parallelGzip} from './parallel-gzip.js'
import {explainDiskFull} from './proc.js'
import {branchRefs, stageRepository} from './stage.js'

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
   * no server holds, under this process's instance lock): a backup is then made from the
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
  const flush = async (): Promise<void> => {
    await source.flush()
    documents = source.stats?.().documents
  }
  // A staged copy keeps a live repository's point fixed while a server commits and repacks; a
  // repository nobody can change (this process holds its instance lock) is that point already,
  // and is archived or bundled as it is, like `tar czf` and `git bundle create` would.
  const stage = source.stable ? undefined : await stageRepository(source.dataDir, flush)
  if (!stage) await flush()
  const repo = stage?.repo ?? join(source.dataDir, LAYOUT_NAMES.repo)
  const tmp = join(dirname(output), `.${basename(output)}.partial`)
  try {
    progress(`writing ${output}`)
    // The bundle's git starts before any lookup of ours: git resolves the base and the branches
    // itself, and the file's header names both afterwards.
    const given = format === 'bundle' ? options.baseCommit : undefined
    const bundle = format === 'bundle' ? writeBundle(repo, given, tmp) : undefined
    bundle?.catch(() => {})
    const refsAtPoint = stage?.refs ?? (await branchRefs(repo))
    // Counting main's documents walks its tree: done beside the archive, not after it.
    const main = refsAtPoint.find((r) => r.name === 'refs/heads/main')
    const counted = documents !== undefined || !main ? Promise.resolve(documents ?? 0) : countDocuments(source.dataDir, repo, main.commit).catch(explainDiskFull)
    counted.catch(() => {})
    let refs = refsAtPoint
    let checksum: string
    let baseCommit: string | undefined
    if (format === 'tar.gz') {
      checksum = await writeTarGz(stage?.dir ?? source.dataDir, tmp).catch(explainDiskFull)
    } else {
      checksum = await bundle!.catch(async (error: Error) => {
        if (given) {
          // Names a base that is not there (or not a commit) rather than git's wording.
          await resolveCommit(repo, given)
          if (/empty bundle/.test(error.message)) throw new EngineError('not_found', `nothing was written after base commit ${given}; no incremental backup is needed`)
        }
        return explainDiskFull(error)
      })
      const header = readBundleHeader(tmp)
      refs = header.refs
      if (given) {
        // The usual incremental (a base on main's line) names exactly that commit as its one
        // prerequisite; anything else is looked up, which also refuses a base that is no commit.
        const named = header.prerequisites.filter((p) => p.startsWith(given))
        baseCommit = named.length === 1 ? named[0] : await resolveCommit(repo, given)
      }
    }
    const documentCount = await counted
    renameSync(tmp, output)
    const manifest: BackupManifest = {
      base_commit: baseCommit ?? null,
      checksum,
      created_at: new Date().toISOString(),
      documents: documentCount,
      format,
      kind: 'backup',
      path: output,
      refs,
      size: statSync(output).size,
      type: baseCommit === undefined ? 'full' : 'incremental',
    }
    writeManifest(manifest)
    return manifest
  } finally {
    rmSync(tmp, {force: true})
    stage?.remove()
  }
}

/**
 * `git bundle create` writes straight into the file, as the plain command does, and the file is
 * hashed from the page cache once it is complete. Through a pipe, git stalled whenever this
 * process was not scheduled to empty it (its pack writing took 220 ms instead of 37 ms on a
 * busy machine), which cost more than hashing a few megabytes afterwards.
 */
async function writeBundle(repo: string, base: string | undefined, file: string): Promise<string> {
  const fd = openSync(file, 'wx')
  let child
  try {
    child = spawn('git', ['-C', repo, 'bundle', 'create', '-q', '-', '--branches', ...(base ? [`^${base}`] : [])], {env: gitEnv(), stdio: ['ignore', fd, 'pipe']})
  } finally {
    closeSync(fd)
  }
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new EngineError('internal', `git bundle failed: ${stderr.trim().split('\n').slice(-3).join('; ') || `exit ${code}`}`))))
  })
  return sha256File(file)
}

/**
 * `tar` writes to a pipe and this process compresses and hashes the bytes on their way to the
 * file: one pass, no second read for the checksum. Git's packs are already deflated, so gzip's
 * fastest level loses little in size and saves most of its time; and the gzip runs on every
 * core (parallel-gzip.ts), where `tar czf` has one gzip process.
 */
function writeTarGz(dir: string, file: string): Promise<string> {
  const members = [...[LAYOUT_NAMES.indexDefinitions].filter((m) => existsSync(join(dir, m))), LAYOUT_NAMES.repo]
  // A lock file left by a killed git would stop the restored repository's next ref update; no
  // ref or object name ends in .lock, so nothing else is left out.
  const child = spawn('tar', ['-cf', '-', '-C', dir, '--exclude=*.lock', ...members], {stdio: ['ignore', 'pipe', 'pipe']})
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new EngineError('internal', `tar failed: ${stderr.trim().split('\n').slice(-3).join('; ') || `exit ${code}`}`))))
  })
  const hash = createHash('sha256')
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk)
      cb(null, chunk)
    },
  })
  // Whichever fails first names the cause: a full disk fails the file before tar sees its
  // broken pipe.
  return Promise.all([done, pipeline(child.stdout, parallelGzip({level: 1}), hashing, createWriteStream(file))]).then(
    () => hash.digest('hex'),
    (error: unknown) => {
      child.kill()
      throw error
    },
  )
}

export async function resolveCommit(repo: string, commit: string): Promise<string> {
  try {
    return (await git(repo, ['rev-parse', '--verify', '--quiet', `${commit}^{commit}`])).stdout.trim()
  } catch {
    throw new EngineError('not_found', `base commit ${commit} is not in this repository; give a commit of an earlier backup's manifest (its refs)`)
  }
}

