import {cpSync, mkdtempSync, readdirSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {type CliResult, repoRoot, runCli as runBuiltCli, runJs} from '../../../test/helpers/cli.js'

export {type CliResult, repoRoot, runJs}
export const exampleDir = join(repoRoot, 'examples', 'acme-coffee')
export const goldenDir = fileURLToPath(new URL('golden/acme-coffee', import.meta.url))

const made: string[] = []
// Runs leave pictures behind; every temporary folder goes when the test process ends.
process.on('exit', () => {
  for (const dir of made) rmSync(dir, {force: true, recursive: true})
})

export function tempDir(prefix = 'campaign-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

/** A copy of the example business, to edit freely. */
export function copyExample(): string {
  const dir = tempDir('campaign-example-')
  cpSync(exampleDir, dir, {recursive: true})
  return dir
}

/** Runs the built CLI in a fresh process with a throwaway HOME, the way a user would. */
export function runCli(args: string[], options: {cwd?: string; env?: Record<string, string>; timeoutMs?: number} = {}): Promise<CliResult> {
  const home = tempDir('campaign-home-')
  const env = {HOME: home, TOOLKIT_CONFIG_DIR: join(home, '.config', 'toolkit'), XDG_CONFIG_HOME: join(home, '.config'), ...options.env}
  return runBuiltCli(args, {...options, env})
}

/** The only run directory under `out`. */
export function runDirIn(out: string): string {
  const dirs = readdirSync(out)
  if (dirs.length !== 1) throw new Error(`expected one run directory in ${out}, found ${dirs.join(', ')}`)
  return join(out, dirs[0])
}

export interface Line {
  event: Record<string, unknown> & {type: string}
  seq: number
  ts: string
}

export function readEvents(runDir: string): Line[] {
  return readFileSync(join(runDir, 'events.ndjson'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line)
}

export function readJson<T = Record<string, unknown>>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T
}

const exampleRuns = new Map<string, Promise<{runDir: string}>>()

/**
 * One in-process generate of the example, shared by the test files that only read its result
 * (the suite runs in one process), so the suite stays fast on a shared machine.
 */
export function sharedExampleRun(name = 'acme-coffee'): Promise<{runDir: string}> {
  let run = exampleRuns.get(name)
  if (!run) {
    run = import('../src/pipeline.js').then(async ({generate}) => {
      const outcome = await generate({businessFile: join(repoRoot, 'examples', name, 'business.toml'), out: tempDir(), skipUrlCheck: true})
      if (outcome.status !== 'success') throw new Error(`the ${name} example run is ${outcome.status}`)
      return {runDir: outcome.runDir}
    })
    exampleRuns.set(name, run)
  }
  return run
}

/** A copy of the shared example run, to change freely (export on it, damage a file, ...). */
export async function sharedExampleRunCopy(): Promise<{runDir: string}> {
  const {runDir} = await sharedExampleRun()
  const copy = join(tempDir(), runDir.split('/').pop() as string)
  cpSync(runDir, copy, {recursive: true})
  return {runDir: copy}
}
