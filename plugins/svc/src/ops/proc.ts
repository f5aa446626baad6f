import {spawn} from 'node:child_process'

import {EngineError} from '../engine/errors.js'
import {gitEnv} from '../engine/git.js'

/** Runs a program (tar, git bundle, ...) to completion; its stderr's last lines become the error. */
export function run(cmd: string, args: string[], options: {cwd?: string} = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {cwd: options.cwd, env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', (error) => reject(new EngineError('internal', `${cmd} could not be started: ${error.message}`)))
    child.on('close', (code) => {
      if (code === 0) resolve(stdout)
      else reject(new EngineError('internal', `${cmd} ${args[0] === '-C' ? args[2] : args[0]} failed: ${stderr.trim().split('\n').slice(-3).join('; ') || `exit ${code}`}`))
    })
  })
}

/** Names the cause and the spec's remedy when the disk is full. */
export function explainDiskFull(error: unknown): never {
  const message = (error as Error).message ?? String(error)
  if (/No space left on device|ENOSPC/i.test(message)) {
    throw new EngineError('unavailable', `No space left on device: ${message}; free disk space (run toolkit svc compact, or git gc) or write to another disk`, {cause: error})
  }
  throw error
}
