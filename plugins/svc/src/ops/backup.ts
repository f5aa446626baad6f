import {existsSync, mkdirSync, renameSync, rmSync, statSync} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'

import {EngineError} from '../engine/errors.js'
import {git} from '../engine/git.js'
import {type BackupFormat, type BackupManifest, sha256File, writeManifest} from './manifest.js'
import {explainDiskFull, run} from './proc.js'
import {stageRepository, type StagedRepo} from './stage.js'

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
  const stage = await stageRepository(source.dataDir, () => source.flush())
  const tmp = join(dirname(output), `.${basename(output)}.partial`)
  try {
    let refs = stage.refs
    if (format === 'tar.gz') {
      progress(`writing ${output}`)
      await run('tar', ['-czf', tmp, '-C', stage.dir, ...(existsSync(join(stage.dir, 'indexes.json')) ? ['indexes.json'] : []), 'repo']).catch(explainDiskFull)
    } else {
      let base: string | undefined
      if (options.baseCommit !== undefined) {
        base = await resolveCommit(stage.repo, options.baseCommit)
        const tips = stage.refs.filter((r) => r.commit !== base)
        if (tips.length === 0 || (await newCommits(stage, base)) === 0) {
          throw new EngineError('not_found', `nothing was written after base commit ${options.baseCommit}; no incremental backup is needed`)
        }
      }
      progress(`writing ${output}`)
      await run('git', ['-C', stage.repo, 'bundle', 'create', '-q', tmp, '--branches', ...(base ? [`^${base}`] : [])]).catch(explainDiskFull)
      refs = await bundleRefs(stage.repo, tmp)
      options = {...options, baseCommit: base}
    }
    renameSync(tmp, output)
    progress('computing the checksum')
    const manifest: BackupManifest = {
      base_commit: options.baseCommit ?? null,
      checksum: await sha256File(output),
      created_at: new Date().toISOString(),
      documents: await countDocuments(stage),
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

export async function resolveCommit(repo: string, commit: string): Promise<string> {
  try {
    return (await git(repo, ['rev-parse', '--verify', '--quiet', `${commit}^{commit}`])).stdout.trim()
  } catch {
    throw new EngineError('not_found', `base commit ${commit} is not in this repository; give a commit of an earlier backup's manifest (its refs)`)
  }
}

async function newCommits(stage: StagedRepo, base: string): Promise<number> {
  const {stdout} = await git(stage.repo, ['rev-list', '--count', '--branches', `^${base}`])
  return Number(stdout.trim())
}

/** The branch refs a bundle carries (`git bundle list-heads`). */
export async function bundleRefs(repo: string, file: string): Promise<Array<{commit: string; name: string}>> {
  const out = await run('git', ['-C', repo, 'bundle', 'list-heads', file])
  return out.split('\n').filter(Boolean).map((l) => {
    const [commit, name] = l.split(' ')
    return {commit, name}
  }).filter((r) => r.name.startsWith('refs/heads/'))
}

async function countDocuments(stage: StagedRepo): Promise<number> {
  const main = stage.refs.find((r) => r.name === 'refs/heads/main')
  if (!main) return 0
  const {stdout} = await git(stage.repo, ['ls-tree', '-r', '--name-only', main.commit])
  let n = 0
  for (const line of stdout.split('\n')) if (line.endsWith('.json')) n++
  return n
}
