import {spawn} from 'node:child_process'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {scratchDir} from './scratch.js'

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
export const runJs = join(repoRoot, 'bin', 'run.js')

export interface CliResult {
  code: number | null
  stderr: string
  stdout: string
}

/** A throwaway HOME with its own config and data directories, so nothing leaks from the machine. */
export function freshHome(): {dir: string; env: Record<string, string>} {
  const dir = scratchDir('toolkit-home-')
  return {
    dir,
    env: {
      HOME: dir,
      XDG_CACHE_HOME: join(dir, '.cache'),
      XDG_CONFIG_HOME: join(dir, '.config'),
      XDG_DATA_HOME: join(dir, '.local', 'share'),
    },
  }
}

/** Runs a CLI entry (the built bin/run.js by default) in a fresh process, the way a user would. */
export function runCli(args: string[], options: {bin?: string; cwd?: string; env?: Record<string, string | undefined>; input?: string; timeoutMs?: number} = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = {...process.env, NO_COLOR: '1', ...options.env}
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k]
    const child = spawn(process.execPath, [options.bin ?? runJs, ...args], {cwd: options.cwd ?? repoRoot, env, stdio: 'pipe'})
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({code, stderr, stdout})
    })
    child.stdin.end(options.input ?? '')
  })
}

/** Every stdout line must be one JSON object: the --format json contract. */
export function jsonLines(stdout: string): Array<Record<string, unknown>> {
  return stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>)
}
