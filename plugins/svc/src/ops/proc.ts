import {spawn} from 'node:child_process'

import {EngineError, isDiskFull} from '../engine/errors.js'
import {gitEnv} from '../engine/git.js'
import {findGitLocks} from '../engine/lock.js'

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

/**
 * Names the cause and the spec's remedy when the disk is full or a Git object is damaged; any
 * other error passes through unchanged.
 */
export function explainDiskFull(error: unknown): never {
  const message = (error as Error).message ?? String(error)
  if (isDiskFull(message)) {
    throw new EngineError('unavailable', `No space left on device: ${message}; free disk space (run toolkit svc compact, or git gc) or write to another disk`, {cause: error})
  }
  if (/is corrupt|unable to unpack|inflate: data stream error|bad object|did not send all necessary objects|missing (blob|tree|commit)/i.test(message)) {
    const object = /\b([0-9a-f]{40})\b/.exec(message)?.[1]
    throw new EngineError('damaged', `corrupt repository${object ? `: object ${object} is damaged or missing` : ''} (${message}); run git fsck --full on the data directory's repo/ to see what is damaged, then restore a backup (toolkit svc restore) or put the damaged documents again`, {cause: error})
  }
  throw error
}

/**
 * Git refuses to move a ref while a `<ref>.lock` file exists (a Git process killed midway leaves
 * one): names the cause and the spec's remedy, and what happened to the operation.
 */
export function explainRefLock(error: Error, outcome: string, repo?: string): Error {
  if (!/cannot lock ref|Unable to create '[^']*\.lock'|Another git process seems to be running|remove the file manually/.test(error.message)) return error
  const locks = repo ? findGitLocks(repo).map((l) => l.path) : []
  return new EngineError('locked', `a ref cannot be locked${locks.length > 0 ? ` (lock file${locks.length > 1 ? 's' : ''} ${locks.join(', ')})` : ''}: ${outcome}. A stale Git lock file: remove the *.lock files in the repository while the service is stopped (at start svc removes lock files older than 60 seconds)`, {cause: error})
}

/**
 * A git command that talks to another repository (push, fetch): killed after `timeoutMs` so a
 * hung network cannot stall the loop that runs it; its stderr's last lines become the error.
 */
export function gitRemoteCommand(repo: string, args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-C', repo, ...args], {env: gitEnv(), stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve()
      else reject(new Error(`git ${args[0]} ${args.find((a, i) => i > 0 && !a.startsWith('-')) ?? ''} failed: ${stderr.trim().split('\n').slice(-2).join('; ') || (signal ? `killed (${signal}) after ${timeoutMs / 1000} s` : `exit ${code}`)}`))
    })
  })
}
