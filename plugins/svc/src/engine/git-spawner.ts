/**
 * Starts the engine's steady-state `git` commands (the history index's catch-up, ref listings, the
 * replicator's pushes, repacks) from a small helper process instead of from the server's own.
 *
 * Why: starting a program forks the calling process, and the server's main thread waits until the
 * child has exec'd. A 250 MB server paid 5-75 ms of its event loop per `git` on a loaded machine
 * (the kernel copies its page tables; under load the child waits for a CPU before it can exec),
 * and the history index catches up every 2 s while writes arrive (issue 24's noisy-neighbour p99,
 * issue 26's CPU per durable write). A worker thread would not help: it forks the same address
 * space, holding the same memory lock the main thread's page faults need. The helper is a bare
 * Node process of a few tens of MB, started once; it forks `git` from its own small image and
 * streams the output back over an IPC channel.
 *
 * The helper ends when the server does (its channel closes). If it dies, the next command starts a
 * new one; a command it was running fails like a failed `git`, and the caller's retry or fallback
 * (every background use has one) applies.
 */
import {type ChildProcess, spawn} from 'node:child_process'

import {gitCommand} from './git-command.js'

// Source as a string (as fts/check.ts) so it runs the same from dist and under the test runner.
const HELPER = `
const {spawn} = require('node:child_process')
const {open} = require('node:fs/promises')
const running = new Map()
// Commands whose output the server asked to hold (background work giving way to requests).
const held = new Set()
process.on('disconnect', () => {
  for (const c of running.values()) c.kill()
  process.exit(0)
})
// Messages not yet written to the channel: a long git log is paused while many wait.
let backlog = 0
const send = (m, child) => {
  backlog++
  process.send(m, () => {
    backlog--
    if (backlog < 8) for (const [id, c] of running) if (!held.has(id)) c.stdout.resume()
  })
  if (backlog >= 64 && child) child.stdout.pause()
}
process.on('message', (m) => {
  if (m.kill !== undefined) {
    running.get(m.kill)?.kill(m.signal || 'SIGTERM')
    return
  }
  if (m.hold !== undefined) {
    if (m.on) held.add(m.hold)
    else held.delete(m.hold)
    const c = running.get(m.hold)
    if (c && m.on) c.stdout.pause()
    else if (c && backlog < 64) c.stdout.resume()
    return
  }
  let child
  try {
    // m.program: git, or nice for background work (git.ts gitCommand).
    child = spawn(m.program, m.args, {env: m.env, stdio: [m.input === undefined && m.idx === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']})
  } catch (error) {
    send({id: m.id, error: error.message})
    return
  }
  running.set(m.id, child)
  let stderr = ''
  child.stdout.on('data', (d) => send({data: d, id: m.id}, child))
  child.stderr.on('data', (d) => (stderr = (stderr + d.toString()).slice(-8000)))
  child.on('error', (error) => {
    held.delete(m.id)
    running.delete(m.id)
    send({id: m.id, error: error.message})
  })
  let feedError
  child.on('close', (code, signal) => {
    held.delete(m.id)
    if (!running.has(m.id)) return
    running.delete(m.id)
    send(feedError ? {id: m.id, error: feedError} : {code, id: m.id, signal, stderr})
  })
  if (m.idx !== undefined) {
    child.stdin.on('error', () => {})
    feedIdx(child.stdin, m.idx, m.input ?? '').catch((error) => {
      feedError = error.message
      child.kill()
    })
  } else if (m.input !== undefined) {
    child.stdin.on('error', () => {})
    child.stdin.end(m.input)
  }
})
// The roll-up's object list (pack-index.ts writeIdxNames, the same steps): every name in the pack
// indexes m.idx as a hex line, then m.input, into the command's stdin; here, so that the server's
// own loop converts none of the millions of names a roll-up of a large repository lists.
const HEX = Buffer.from('0123456789abcdef', 'latin1')
async function feedIdx(stdin, paths, tail) {
  for (const path of paths) {
    const fh = await open(path, 'r')
    try {
      const head = Buffer.alloc(1032)
      const {bytesRead} = await fh.read(head, 0, 1032, 0)
      if (bytesRead < 1032 || head.readUInt32BE(0) !== 0xff744f63 || head.readUInt32BE(4) !== 2) throw new Error(path + ' is not a version 2 pack index')
      const count = head.readUInt32BE(1028)
      const raw = Buffer.allocUnsafe(Math.min(count, 65536) * 20)
      for (let done = 0; done < count; ) {
        const n = Math.min(count - done, 65536)
        const r = await fh.read(raw, 0, n * 20, 1032 + done * 20)
        if (r.bytesRead !== n * 20) throw new Error(path + ' is truncated')
        const out = Buffer.allocUnsafe(n * 41)
        let o = 0
        for (let i = 0, s = 0; i < n; i++) {
          for (let end = s + 20; s < end; s++) {
            out[o++] = HEX[raw[s] >> 4]
            out[o++] = HEX[raw[s] & 15]
          }
          out[o++] = 10
        }
        if (!stdin.write(out)) {
          await new Promise((resolve, reject) => {
            const closed = () => reject(new Error('the command closed its input'))
            stdin.once('close', closed)
            stdin.once('drain', () => {
              stdin.off('close', closed)
              resolve()
            })
          })
        }
        done += n
      }
    } finally {
      await fh.close()
    }
  }
  stdin.end(tail)
}
`

export interface HelperRun {
  /** Asks the helper to end the command (an abort). */
  kill(signal?: NodeJS.Signals): void
  /** Asks the helper to stop reading the command's output (`true`) or read it again (`false`): git then waits on its full pipe. */
  hold(on: boolean): void
  /** Settles when git exits: its exit code, or the reason it could not run. */
  done: Promise<{code: null | number; error?: string; signal: null | string; stderr: string}>
}

interface Waiting {
  /** The helper running it: only its end fails the command. */
  helper: ChildProcess
  onData(chunk: Buffer): void
  settle(r: {code: null | number; error?: string; signal: null | string; stderr: string}): void
}

type HelperMessage = {code: null | number; id: number; signal: null | string; stderr: string} | {data: Uint8Array; id: number} | {error: string; id: number}

let helper: ChildProcess | undefined
const waiting = new Map<number, Waiting>()
let nextId = 1
let enabled = 0
/** Commands started through a helper (tests observe that steady state starts none itself). */
export const spawnerStats = {helperStarts: 0, runs: 0}

/** An open engine counts itself in: while any is open, `git` commands go through the helper. */
export function useGitSpawner(): () => void {
  enabled++
  clearTimeout(idleStop)
  let released = false
  return () => {
    if (released) return
    released = true
    enabled--
    // Kept a moment for the next engine of the same process (tests, restarts open one after another).
    if (enabled === 0) {
      idleStop = setTimeout(stopHelper, 2000)
      idleStop.unref()
    }
  }
}

let idleStop: NodeJS.Timeout | undefined

/** The helper's process id while one runs (tests end it to see the next command start another). */
export function gitHelperPid(): number | undefined {
  return helper?.connected ? helper.pid : undefined
}

export function gitSpawnerActive(): boolean {
  return enabled > 0 && process.env.SVC_GIT_HELPER !== '0'
}

function stopHelper(): void {
  const h = helper
  helper = undefined
  if (!h) return
  if (h.connected) h.disconnect()
  failAll(h, 'git helper stopped')
}

function failAll(h: ChildProcess, reason: string): void {
  for (const [id, w] of waiting) {
    if (w.helper !== h) continue
    waiting.delete(id)
    w.settle({code: null, error: reason, signal: null, stderr: ''})
  }
}

function startHelper(): ChildProcess {
  // Without NODE_OPTIONS: a profiler or loader the server was given must not start here too (the
  // server's own command-line flags are not passed on by spawn).
  const h = spawn(process.execPath, ['-e', HELPER], {env: {...process.env, NODE_OPTIONS: ''}, serialization: 'advanced', stdio: ['ignore', 'ignore', 'ignore', 'ipc']})
  spawnerStats.helperStarts++
  h.on('message', (m: HelperMessage) => {
    const w = waiting.get(m.id)
    if (!w) return
    if ('data' in m) {
      w.onData(Buffer.isBuffer(m.data) ? m.data : Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength))
      return
    }
    waiting.delete(m.id)
    refresh()
    w.settle('error' in m ? {code: null, error: m.error, signal: null, stderr: ''} : m)
  })
  const gone = (): void => {
    if (helper === h) helper = undefined
    failAll(h, 'git helper process ended')
    refresh()
  }
  h.on('exit', gone)
  h.on('error', gone)
  h.unref()
  helper = h
  refresh()
  return h
}

/** The helper keeps the process alive only while a command of ours is running. */
function refresh(): void {
  const ch = (helper as undefined | {channel?: {ref(): void; unref(): void}})?.channel
  if (waiting.size > 0) ch?.ref()
  else ch?.unref()
}

/**
 * Runs `git <args>` through the helper; `onData` gets stdout as it comes. `idx`: pack indexes whose
 * object names the helper writes to git's stdin (before `input`): the roll-up's object list.
 */
export function runThroughHelper(args: string[], env: NodeJS.ProcessEnv, onData: (chunk: Buffer) => void, input?: string, nice?: number, idx?: string[]): HelperRun {
  const [program, argv] = gitCommand(args, nice)
  const h = helper?.connected ? helper : startHelper()
  const id = nextId++
  spawnerStats.runs++
  let settle!: Waiting['settle']
  const done = new Promise<Parameters<Waiting['settle']>[0]>((resolve) => (settle = resolve))
  waiting.set(id, {helper: h, onData, settle})
  refresh()
  try {
    h.send({args: argv, env, id, idx, input, program})
  } catch (error) {
    waiting.delete(id)
    refresh()
    settle({code: null, error: (error as Error).message, signal: null, stderr: ''})
  }
  return {
    done,
    hold: (on) => {
      if (waiting.has(id) && h.connected) h.send({hold: id, on})
    },
    kill: (signal) => {
      if (waiting.has(id) && h.connected) h.send({kill: id, signal})
    },
  }
}
