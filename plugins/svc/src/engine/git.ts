import {execFile, spawn} from 'node:child_process'

import {EngineError} from './errors.js'
import {gitCommand} from './git-command.js'
import {gitSpawnerActive, runThroughHelper} from './git-spawner.js'
import {writeIdxNames} from './pack-index.js'

export interface GitResult {
  stdout: string
}

/**
 * The nice value of background git (the history index's log, commit-graph writes, automatic
 * repacks): on a 2-core machine they took a core from the server's event loop right after start,
 * and every search of that minute waited for one (issue 13's search p95). Requests that wait on
 * git themselves (a history read) run at the server's own priority.
 */
export const BACKGROUND_NICE = 10

export interface GitOptions {
  /** Work no request waits for: run at BACKGROUND_NICE. */
  background?: boolean
}

/** Holds a streaming command's output (and so, once its pipe is full, the command itself). */
export interface StreamControl {
  pause(): void
  resume(): void
}

/**
 * Runs one git command in a repository; for the rare calls (history, branches, maintenance).
 * `idx`: pack indexes whose every object name is written to git's stdin, one a line, before
 * `input` (the roll-up's object list: millions of names, converted outside the server's loop when
 * the git helper runs).
 */
export function git(repo: string, args: string[], options: GitOptions & {idx?: string[]; input?: string; maxBuffer?: number} = {}): Promise<GitResult> {
  const full = ['-C', repo, ...args]
  const maxBuffer = options.maxBuffer ?? 256 * 1024 * 1024
  if (gitSpawnerActive()) {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = []
      let size = 0
      const run = runThroughHelper(full, gitEnv(), (d) => {
        size += d.length
        if (size > maxBuffer) run.kill('SIGKILL')
        else chunks.push(d)
      }, options.input, options.background ? BACKGROUND_NICE : undefined, options.idx)
      void run.done.then((r) => {
        if (r.code === 0 && size <= maxBuffer) resolve({stdout: Buffer.concat(chunks).toString('utf8')})
        else {
          const why = size > maxBuffer ? 'stdout maxBuffer length exceeded' : r.error ?? `exit ${r.code ?? r.signal}`
          const msg = (r.stderr || why).trim().split('\n').slice(-3).join('; ')
          reject(new EngineError('internal', `git ${args[0]} failed: ${msg}`, {cause: Object.assign(new Error(why), {code: r.code})}))
        }
      })
    })
  }
  return new Promise((resolve, reject) => {
    const child = execFile(...gitCommand(full, options.background ? BACKGROUND_NICE : undefined), {encoding: 'utf8', env: gitEnv(), maxBuffer}, (err, stdout, stderr) => {
      if (err) {
        const msg = (stderr || err.message).trim().split('\n').slice(-3).join('; ')
        reject(new EngineError('internal', `git ${args[0]} failed: ${msg}`, {cause: err}))
      } else resolve({stdout})
    })
    if (options.idx !== undefined && child.stdin) {
      child.stdin.on('error', () => {})
      writeIdxNames(child.stdin, options.idx, options.input ?? '').catch(() => child.kill())
    } else if (options.input !== undefined) child.stdin?.end(options.input)
  })
}

/**
 * Streams a git command's stdout as raw chunks; resolves when it exits successfully. An abort
 * (the engine closing) ends git and rejects; so does an error thrown by `onData`.
 */
export function gitStream(repo: string, args: string[], onData: (chunk: Buffer) => void, signal?: AbortSignal, what = `git ${args[0]}`, options: GitOptions & {control?: (c: StreamControl) => void} = {}): Promise<void> {
  const full = ['-C', repo, ...args]
  if (gitSpawnerActive()) {
    return new Promise((resolve, reject) => {
      let failed: unknown
      const run = runThroughHelper(full, gitEnv(), (d) => {
        if (failed !== undefined) return
        try {
          onData(d)
        } catch (error) {
          failed = error
          run.kill()
        }
      }, undefined, options.background ? BACKGROUND_NICE : undefined)
      options.control?.({pause: () => run.hold(true), resume: () => run.hold(false)})
      const abort = (): void => run.kill()
      signal?.addEventListener('abort', abort, {once: true})
      if (signal?.aborted) abort()
      void run.done.then((r) => {
        signal?.removeEventListener('abort', abort)
        if (failed !== undefined) reject(failed)
        else if (signal?.aborted) reject(Object.assign(new Error('The operation was aborted'), {code: 'ABORT_ERR', name: 'AbortError'}))
        else if (r.code === 0) resolve()
        else reject(new EngineError('internal', `${what} failed: ${r.stderr.trim() || r.error || `exit ${r.code ?? r.signal}`}`))
      })
    })
  }
  return new Promise((resolve, reject) => {
    const child = spawn(...gitCommand(full, options.background ? BACKGROUND_NICE : undefined), {env: gitEnv(), signal, stdio: ['ignore', 'pipe', 'pipe']})
    options.control?.({pause: () => child.stdout.pause(), resume: () => child.stdout.resume()})
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      try {
        onData(d)
      } catch (error) {
        child.kill()
        reject(error)
      }
    })
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new EngineError('internal', `${what} failed: ${stderr.trim() || `exit ${code}`}`))))
  })
}

/** Git must not pick up the user's or the system's config in ways that change object layout or prompt. */
export function gitEnv(): NodeJS.ProcessEnv {
  return {...process.env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C'}
}
