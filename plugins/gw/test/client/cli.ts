import {type ChildProcess, spawn} from 'node:child_process'
import {fileURLToPath} from 'node:url'

export const RUN = fileURLToPath(new URL('../../../../bin/run.js', import.meta.url))

export interface RunResult {
  code: number | null
  stderr: string
  stdout: string
}

export interface RunOptions {
  cwd: string
  env?: Record<string, string>
  home: string
  input?: string
  /** Called with each stderr chunk, e.g. to play the browser once the URL is printed. */
  onStderr?: (text: string, child: ChildProcess) => void
  timeoutMs?: number
}

/** Runs the built CLI in a fresh process with a private HOME, the way a user would. */
export function toolkit(args: string[], o: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN, ...args], {
      cwd: o.cwd,
      env: {
        HOME: o.home,
        NO_COLOR: '1',
        PATH: process.env.PATH ?? '',
        TOOLKIT_CONFIG_DIR: `${o.home}/.config/toolkit`,
        XDG_CONFIG_HOME: `${o.home}/.config`,
        ...o.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`toolkit ${args.join(' ')} timed out; stderr: ${stderr}`))
    }, o.timeoutMs ?? 30_000)
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
      o.onStderr?.(stderr, child)
    })
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({code, stderr, stdout})
    })
    child.stdin.end(o.input ?? '')
  })
}

export const records = (stdout: string): Array<Record<string, unknown>> =>
  stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>)
