import {type ChildProcess, spawn} from 'node:child_process'
import {fileURLToPath} from 'node:url'

import {tempDir} from './tmp.js'

export const RUN_JS = fileURLToPath(new URL('../../../../bin/run.js', import.meta.url))

export interface Started {
  child: ChildProcess
  exited: Promise<{code: null | number; signal: null | string}>
  ready: Record<string, unknown>
  stderr: () => string
}

/** An isolated environment: nothing from the machine's HOME or config reaches the CLI. */
export function cliEnv(): NodeJS.ProcessEnv {
  const home = tempDir('svc-home-')
  return {...process.env, HOME: home, NO_COLOR: '1', TOOLKIT_CONFIG_DIR: home, XDG_CONFIG_HOME: home}
}

export function runCli(args: string[], options: {cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number} = {}): Promise<{code: null | number; stderr: string; stdout: string}> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN_JS, ...args], {cwd: options.cwd, env: options.env ?? cliEnv()})
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`toolkit ${args.join(' ')} did not exit within ${options.timeoutMs ?? 20_000} ms; stderr: ${stderr}`))
    }, options.timeoutMs ?? 20_000)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({code, stderr, stdout})
    })
  })
}

/** Starts `toolkit svc server ... --format json` and resolves with its ready record. */
export function startServer(args: string[], options: {cwd?: string; env?: NodeJS.ProcessEnv} = {}): Promise<Started> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN_JS, 'svc', 'server', '--format', 'json', ...args], {cwd: options.cwd, env: options.env ?? cliEnv()})
    let stdout = ''
    let stderr = ''
    const exited = new Promise<{code: null | number; signal: null | string}>((r) => child.on('exit', (code, signal) => r({code, signal})))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`server did not start within 20 s; stderr: ${stderr}`))
    }, 20_000)
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
      const nl = stdout.indexOf('\n')
      if (nl === -1) return
      clearTimeout(timer)
      // A server that dies after it was ready fails a later request with ECONNREFUSED, which says
      // nothing of why: its own last words go to the test log.
      // A signal the test did not send (a native crash, a stray kill) says as much as an exit code.
      let killedByTest = false
      const kill = child.kill.bind(child)
      child.kill = (sig?: NodeJS.Signals | number) => {
        killedByTest = true
        return kill(sig)
      }
      void exited.then(({code, signal}) => {
        if ((code !== null && code !== 0) || !killedByTest)
          process.stderr.write(`\nsvc server (${args.join(' ')}) exited with ${code === null ? `signal ${signal}` : `code ${code}`}; its stderr ends:\n${stderr.slice(-4000)}\n`)
      })
      try {
        resolve({child, exited, ready: JSON.parse(stdout.slice(0, nl)) as Record<string, unknown>, stderr: () => stderr})
      } catch (error) {
        reject(error)
      }
    })
    void exited.then(({code}) => {
      clearTimeout(timer)
      reject(new Error(`server exited (${code}) before it was ready; stderr: ${stderr}`))
    })
  })
}
