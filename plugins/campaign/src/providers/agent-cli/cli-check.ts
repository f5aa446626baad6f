import {execFile, spawnSync} from 'node:child_process'
import {accessSync, constants, statSync} from 'node:fs'
import {delimiter, join} from 'node:path'

import {UsageError} from '@toolkit/kit'

/** An agent CLI found on PATH, and its version. */
export interface FoundCli {
  path: string
  version: string
}

/** What the engine needs to know about one agent CLI to check it before missions start. */
export interface CliSpec {
  /** The command on PATH: `claude`, `codex`. */
  command: string
  /** How to install it, for the error message. */
  install: string
  /** The oldest version whose flags the provider uses (the one it is tested with). */
  minVersion: string
  /** Finds the version in the `--version` output. */
  versionPattern: RegExp
}

/** The executable named `command` on `PATH`, or null. */
export function which(command: string, path = process.env.PATH ?? ''): null | string {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue
    const file = join(dir, command)
    try {
      if (!statSync(file).isFile()) continue
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // Missing or not executable here: look in the next folder.
    }
  }
  return null
}

/** Compares dotted versions numerically: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

export type Probe = {found: FoundCli; ok: true} | {found: FoundCli | null; ok: false; problem: string}

/** The outcome of running a CLI briefly (`--version`, `auth status`). */
export interface QuickRun {
  error?: Error
  status: null | number
  stdout: string
}

/** Runs a CLI briefly without blocking the event loop (for `campaign providers`). */
export function runQuick(path: string, args: string[], env: NodeJS.ProcessEnv): Promise<QuickRun> {
  return new Promise((resolve) => {
    execFile(path, args, {encoding: 'utf8', env, timeout: 30_000}, (error, stdout) => {
      resolve({error: error && typeof error.code !== 'number' ? error : undefined, status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout: stdout ?? ''})
    })
  })
}

/** Runs a CLI briefly and waits (before a run starts, nothing else is going on). */
export function runQuickSync(path: string, args: string[], env: NodeJS.ProcessEnv): QuickRun {
  const r = spawnSync(path, args, {encoding: 'utf8', env, timeout: 30_000})
  return {error: r.error, status: r.status, stdout: r.stdout ?? ''}
}

/** Where the CLI stands, without throwing: for `requireCli`. */
export function probeCli(spec: CliSpec, env: NodeJS.ProcessEnv = process.env): Probe {
  const path = which(spec.command, env.PATH)
  return path === null ? missing(spec) : verdict(spec, path, runQuickSync(path, ['--version'], env))
}

/** The same, without blocking: for `campaign providers`. */
export async function probeCliAsync(spec: CliSpec, env: NodeJS.ProcessEnv = process.env): Promise<Probe> {
  const path = which(spec.command, env.PATH)
  return path === null ? missing(spec) : verdict(spec, path, await runQuick(path, ['--version'], env))
}

function missing(spec: CliSpec): Probe {
  return {found: null, ok: false, problem: `the ${spec.command} CLI was not found on PATH; install it with ${spec.install}`}
}

function verdict(spec: CliSpec, path: string, run: QuickRun): Probe {
  const match = spec.versionPattern.exec(run.stdout)
  if (run.error || run.status !== 0 || !match) {
    return {found: null, ok: false, problem: `${path} --version did not print a ${spec.command} version${run.error ? ` (${run.error.message})` : ''}`}
  }
  const found = {path, version: match[1]}
  if (compareVersions(found.version, spec.minVersion) < 0) {
    return {found, ok: false, problem: `${spec.command} ${found.version} at ${path} is not supported: toolkit needs ${spec.command} ${spec.minVersion} or newer (${spec.install})`}
  }
  return {found, ok: true}
}

/** The CLI, or a usage error (exit 2) that says how to get a supported one. */
export function requireCli(spec: CliSpec, env: NodeJS.ProcessEnv = process.env): FoundCli {
  const probe = probeCli(spec, env)
  if (!probe.ok) throw new UsageError(probe.problem)
  return probe.found
}
