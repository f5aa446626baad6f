import {execFile, spawn} from 'node:child_process'

import {EngineError} from './errors.js'

export interface GitResult {
  stdout: string
}

/** Runs one git command in a repository; for the rare calls (history, branches, maintenance). */
export function git(repo: string, args: string[], options: {input?: string; maxBuffer?: number} = {}): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile('git', ['-C', repo, ...args], {encoding: 'utf8', env: gitEnv(), maxBuffer: options.maxBuffer ?? 256 * 1024 * 1024}, (err, stdout, stderr) => {
      if (err) {
        const msg = (stderr || err.message).trim().split('\n').slice(-3).join('; ')
        reject(new EngineError('internal', `git ${args[0]} failed: ${msg}`, {cause: err}))
      } else resolve({stdout})
    })
    if (options.input !== undefined) child.stdin?.end(options.input)
  })
}

/** Streams a git command's stdout as raw chunks; resolves when it exits successfully. */
export function gitStream(repo: string, args: string[], onData: (chunk: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-C', repo, ...args], {env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe']})
    let stderr = ''
    child.stdout.on('data', onData)
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new EngineError('internal', `git ${args[0]} failed: ${stderr.trim()}`))))
  })
}

/** Git must not pick up the user's or the system's config in ways that change object layout or prompt. */
export function gitEnv(): NodeJS.ProcessEnv {
  return {...process.env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C'}
}
