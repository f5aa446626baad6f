import {spawn} from 'node:child_process'
import {createWriteStream} from 'node:fs'
import {createInterface} from 'node:readline'

export interface CliRun {
  args: string[]
  cwd: string
  env: NodeJS.ProcessEnv
  /** Each stdout line that is a JSON object, in order. */
  onEvent(event: Record<string, unknown>): void
  path: string
  /** Values that must never appear in an error message (the bearer token, API keys). */
  secrets: string[]
  signal: AbortSignal
  /** Kills the CLI when it runs longer. */
  timeoutMs: number
  /** Receives stdout exactly as the CLI wrote it. */
  transcriptFile: string
}

export interface CliExit {
  code: null | number
  /** The end of stderr, secrets removed, for an error message. */
  stderr: string
  timedOut: boolean
}

const STDERR_KEPT = 4000
// A CLI that ignores SIGTERM (busy in a tool call) gets this long before SIGKILL.
const KILL_GRACE_MS = 3000

/**
 * Runs an agent CLI to its end: stdout goes line for line, untouched, to the transcript and each
 * JSON line to `onEvent`; stderr is kept (bounded) for the error message. An interrupted run or a
 * timeout ends the CLI (SIGTERM, then SIGKILL), so no model keeps working after its mission.
 */
export async function runCli(run: CliRun): Promise<CliExit> {
  const transcript = createWriteStream(run.transcriptFile, {flags: 'a'})
  const child = spawn(run.path, run.args, {cwd: run.cwd, env: run.env, stdio: ['ignore', 'pipe', 'pipe']})
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (d: string) => {
    stderr = (stderr + d).slice(-STDERR_KEPT)
  })
  let timedOut = false
  let killer: NodeJS.Timeout | undefined
  const stop = () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    killer ??= setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS)
  }
  const timer = setTimeout(() => {
    timedOut = true
    stop()
  }, run.timeoutMs)
  run.signal.addEventListener('abort', stop, {once: true})
  const lines = createInterface({crlfDelay: Infinity, input: child.stdout})
  const exited = new Promise<{code: null | number; error?: Error}>((resolve) => {
    child.once('error', (error) => resolve({code: null, error}))
    child.once('close', (code) => resolve({code}))
  })
  try {
    for await (const line of lines) {
      transcript.write(`${line}\n`)
      if (!line.startsWith('{')) continue
      let event: unknown
      try {
        event = JSON.parse(line)
      } catch {
        continue
      }
      if (event && typeof event === 'object' && !Array.isArray(event)) run.onEvent(event as Record<string, unknown>)
    }
    const {code, error} = await exited
    if (error) throw new Error(`could not start ${run.path}: ${redact(error.message, run.secrets)}`)
    return {code, stderr: redact(stderr.trim(), run.secrets), timedOut}
  } finally {
    clearTimeout(timer)
    clearTimeout(killer)
    run.signal.removeEventListener('abort', stop)
    stop()
    await new Promise<void>((resolve) => {
      transcript.end(() => resolve())
    })
  }
}

/** The text with every secret replaced by `***`. */
export function redact(text: string, secrets: string[]): string {
  let out = text
  for (const s of secrets) if (s.length >= 8) out = out.replaceAll(s, '***')
  return out
}

/** The last lines of stderr worth showing. */
export function tail(text: string, lines = 5): string {
  return text.split('\n').filter((l) => l.trim() !== '').slice(-lines).join(' | ')
}
