import {type ChildProcessWithoutNullStreams, spawn} from 'node:child_process'
import {rmSync, writeFileSync} from 'node:fs'

import {EngineError} from './errors.js'
import {gitEnv} from './git.js'

export interface CommitFile {
  /** Undefined deletes the path. */
  content?: Buffer
  /** About how many entries the file's directory holds, for the estimate of fast-import's name table (NAME_BUDGET). */
  dirEntries?: number
  path: string
}

/**
 * File names a fast-import process may hold before the writer replaces it with a fresh one.
 *
 * Why (issue 26, docs/benchmarks.md "svc at 1M documents: the writer"): fast-import interns every
 * file name of every tree it loads or writes in a hash table of a fixed 4,451 buckets, and never
 * frees one. A write to a table of a million documents loads that document's leaf tree (about 15
 * names) and adds its own name; once a few hundred thousand names are in, every new name walks a
 * chain of ~100-225 entries scattered over tens of MB (a cache miss each), and that walk was half
 * of fast-import's CPU: 380-410 us per commit against 140 us for the same commits into a small
 * table. A fresh process starts with an empty table; the price is loading each leaf tree again
 * when it is next written (one object read, ~30 us at a million documents). At 100k documents the
 * estimate never reaches the budget before the repack's own restart, so nothing changes there.
 */
export const NAME_BUDGET = 200_000

export interface CommitSpec {
  authorEmail?: string
  authorName: string
  branch: string
  files: CommitFile[]
  message: string
  /** Epoch milliseconds. */
  time: number
}

/**
 * What the engine asks of its Git writer: `CommitWriter` (fast-import, the default) or
 * `PackCommitWriter` (the in-process pack writer, `EngineOptions.writer: 'pack'`).
 */
export interface GitWriter {
  /** Set once the writer died: nothing more can be committed by it. */
  readonly error: Error | undefined
  checkpoint(): Promise<void>
  close(): Promise<void>
  /** Queues one commit; false asks the caller to wait for `drain()`. */
  commit(spec: CommitSpec): boolean
  createBranch(branch: string, from: string): void
  drain(): Promise<void>
  kill(): Promise<void>
  restart(): Promise<void>
}

/**
 * One long-lived `git fast-import` that turns each write into a commit. Commits become visible
 * (objects in a pack, refs updated) only at a checkpoint, which `checkpoint()` requests and
 * resolves once fast-import has reported it done.
 */
export class CommitWriter implements GitWriter {
  private child: ChildProcessWithoutNullStreams
  private closed = false
  /** Set by kill(): its exit is expected and reported to nobody. */
  private abandoned = false
  private exitError: Error | undefined
  /** Branches some process of this writer committed to (their refs exist once it checkpoints or exits). */
  private committed = new Set<string>()
  /** Branches the current process has in its branch table. */
  private known = new Set<string>()
  private out = ''
  private progress = 0
  private stderr = ''
  private corked = false
  /** Commands held while the process restarts. */
  private held: Buffer[] | undefined
  private waiters = new Map<number, {reject(e: Error): void; resolve(): void}>()
  /** Directories the current process was sent a file in: it loaded each one's tree, every name in it. */
  private dirsLoaded = new Set<string>()
  /** Estimate of the file names the current process holds (see NAME_BUDGET). */
  private names = 0
  private restarting: Promise<void> | undefined

  constructor(
    private readonly repo: string,
    private readonly existingBranches: () => Set<string>,
    private readonly committer = 'svc <svc@localhost>',
    /** Holds the pid of the running fast-import, for the next start after a crash (see lock.ts). */
    private readonly pidFile?: string,
    /** Called once when fast-import dies without being asked to (killed, crashed, refused a command). */
    private readonly onExit?: (error: Error) => void,
    private readonly nameBudget = NAME_BUDGET,
  ) {
    this.child = this.spawn()
  }

  /** Set once fast-import died: nothing more can be committed by this writer. */
  get error(): Error | undefined {
    return this.exitError
  }

  /** Everything written so far becomes visible in the repository once this resolves. */
  checkpoint(): Promise<void> {
    if (this.exitError) return Promise.reject(this.exitError)
    const token = ++this.progress
    const done = new Promise<void>((resolve, reject) => this.waiters.set(token, {reject, resolve}))
    this.send(Buffer.from(`checkpoint\nprogress svc-${token}\n`))
    return done
  }

  /**
   * Ends the process (`done`: every commit sent is in the repository, and fast-import drops the
   * .keep files that stop `git repack` from merging its packs) and starts a fresh one. Commands
   * sent meanwhile are held and replayed to the new process in order.
   */
  restart(): Promise<void> {
    // A caller asking while one is on its way (the repack after the name budget's restart) waits for that one.
    this.restarting ??= this.replaceProcess().finally(() => (this.restarting = undefined))
    return this.restarting
  }

  private async replaceProcess(): Promise<void> {
    if (this.held || this.closed || this.exitError) return
    this.held = []
    // Everything sent from now on goes to the new process, which knows no branch and no name yet.
    this.known.clear()
    this.dirsLoaded.clear()
    this.names = 0
    const old = this.child
    const exited = new Promise<number | null>((resolve) => old.once('close', (code) => resolve(code)))
    old.stdin.end('done\n')
    const code = await exited
    // kill() while the old process ended: the engine gave this writer up, nothing is to be started.
    if (this.abandoned) {
      this.held = undefined
      return
    }
    if (code !== 0) {
      this.exitError = new EngineError('internal', `git fast-import exited (${code}) while restarting: ${this.stderr.trim().split('\n').slice(-3).join('; ')}`)
      this.held = undefined
      this.failWaiters()
      return
    }
    this.child = this.spawn()
    const held = this.held
    this.held = undefined
    for (const b of held) this.child.stdin.write(b)
  }

  private send(b: Buffer): boolean {
    if (this.held) {
      this.held.push(b)
      return true
    }
    // Everything sent in one event-loop turn goes down the pipe in one write: fewer syscalls
    // and larger reads for fast-import when many writes are acknowledged together.
    if (!this.corked) {
      this.corked = true
      this.child.stdin.cork()
      const stdin = this.child.stdin
      setImmediate(() => {
        this.corked = false
        stdin.uncork()
      })
    }
    return this.child.stdin.write(b)
  }

  async close(): Promise<void> {
    if (this.closed) return
    while (this.held && !this.exitError) await new Promise((r) => setTimeout(r, 2))
    this.closed = true
    if (this.exitError) return
    const exited = new Promise<void>((resolve) => this.child.once('close', () => resolve()))
    this.child.stdin.end('done\n')
    await exited
    if (this.pidFile) rmSync(this.pidFile, {force: true})
    if (this.exitError) throw this.exitError
  }

  /** Queues one commit; returns false when the pipe is full (wait for `drain()`). */
  commit(spec: CommitSpec): boolean {
    if (this.exitError) throw this.exitError
    const ref = `refs/heads/${spec.branch}`
    const parts: Buffer[] = []
    const msg = Buffer.from(spec.message)
    const when = `${Math.floor(spec.time / 1000)} +0000`
    const who = `${sanitize(spec.authorName)} <${spec.authorEmail ?? 'svc@localhost'}> ${when}`
    const head = `commit ${ref}\nauthor ${who}\ncommitter ${this.committer} ${when}\ndata ${msg.length}\n`
    parts.push(Buffer.from(head), msg, Buffer.from('\n'))
    if (!this.known.has(spec.branch)) {
      // fast-import does not read existing refs by itself; ^0 continues an existing branch.
      if (this.committed.has(spec.branch) || this.existingBranches().has(spec.branch)) parts.push(Buffer.from(`from ${ref}^0\n`))
      this.known.add(spec.branch)
      this.committed.add(spec.branch)
    }
    for (const f of spec.files) {
      if (f.content === undefined) parts.push(Buffer.from(`D ${quotePath(f.path)}\n`))
      else parts.push(Buffer.from(`M 100644 inline ${quotePath(f.path)}\ndata ${f.content.length}\n`), f.content, Buffer.from('\n'))
    }
    parts.push(Buffer.from('\n'))
    const ok = this.send(Buffer.concat(parts))
    this.countNames(spec.files)
    return ok
  }

  /** Adds what `files` bring into fast-import's name table; past the budget, a fresh process takes over. */
  private countNames(files: CommitFile[]): void {
    for (const f of files) {
      this.names++
      // Directories of a table under 131,072 documents hold one name or none: not worth a lookup per write.
      const entries = f.dirEntries ?? 0
      if (entries < 2) continue
      const dir = f.path.slice(0, f.path.lastIndexOf('/'))
      if (!this.dirsLoaded.has(dir)) {
        this.dirsLoaded.add(dir)
        this.names += entries
      }
    }
    if (this.names > this.nameBudget && !this.held) void this.restart().catch((error: unknown) => this.onExit?.(error as Error))
  }

  /** Creates `branch` at the current tip of `from` (as fast-import sees it, pending commits included). */
  createBranch(branch: string, from: string): void {
    const fromSpec = this.known.has(from) ? `refs/heads/${from}` : `refs/heads/${from}^0`
    this.send(Buffer.from(`reset refs/heads/${branch}\nfrom ${fromSpec}\n\n`))
    this.known.add(branch)
    this.committed.add(branch)
  }

  /** Ends the process at once (a writer the engine gave up on); resolves when it is gone. */
  kill(): Promise<void> {
    this.closed = true
    this.abandoned = true
    this.exitError ??= new EngineError('unavailable', 'git fast-import was replaced')
    this.failWaiters()
    const child = this.child
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
    const gone = new Promise<void>((resolve) => child.once('close', () => resolve()))
    child.kill('SIGKILL')
    return gone
  }

  drain(): Promise<void> {
    if (this.held || !this.child.stdin.writableNeedDrain) return Promise.resolve()
    return new Promise((resolve) => this.child.stdin.once('drain', () => resolve()))
  }

  private failWaiters(): void {
    for (const w of this.waiters.values()) w.reject(this.exitError ?? new EngineError('closed', 'writer closed'))
    this.waiters.clear()
  }

  private spawn(): ChildProcessWithoutNullStreams {
    // Own process group: a Ctrl-C in the terminal must reach svc only, which then ends fast-import
    // with `done` after the last commit; a fast-import killed mid-stream loses its open pack.
    // --force: without it every checkpoint proves each moved ref a fast-forward by walking (and
    // inflating) every commit made since the last one, 7-10 us of fast-import CPU per commit at
    // the 650-2,000 commits per checkpoint of a sustained stream (docs/benchmarks.md, "fast-import CPU
    // per commit"). Only this process moves refs/heads/* while the engine holds the instance lock;
    // removeBranch replaces it first, and restore refuses while a server runs.
    const child = spawn('git', ['-C', this.repo, 'fast-import', '--quiet', '--done', '--force'], {
      detached: true,
      env: fastImportEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    if (this.pidFile && child.pid) writeFileSync(this.pidFile, `${child.pid}\n`)
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (s: string) => {
      this.out += s
      let nl
      while ((nl = this.out.indexOf('\n')) !== -1) {
        const line = this.out.slice(0, nl)
        this.out = this.out.slice(nl + 1)
        const m = /^progress svc-(\d+)$/.exec(line)
        if (!m) continue
        const token = Number(m[1])
        for (const [t, w] of this.waiters) {
          if (t <= token) {
            this.waiters.delete(t)
            w.resolve()
          }
        }
      }
    })
    child.stderr.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-4000)
    })
    child.stdin.on('error', () => {})
    child.on('close', (code) => {
      // A process ended by restart() is replaced, not failed.
      if (child !== this.child || this.held || this.abandoned) return
      const unexpected = code !== 0 || !this.closed
      if (unexpected) {
        this.exitError = new EngineError('internal', `git fast-import exited (${code ?? child.signalCode}): ${this.stderr.trim().split('\n').slice(-3).join('; ')}`)
      }
      this.failWaiters()
      if (unexpected && this.exitError) this.onExit?.(this.exitError)
    })
    return child
  }
}

/**
 * glibc hands freed heap back to the kernel as soon as 128 KiB sit free at its top, and
 * fast-import frees zlib's state after every object: the heap shrinks and grows again with `brk`
 * twice per object, which cost as much system time as fast-import's own work. A higher trim
 * threshold keeps that memory mapped (docs/svc.md, "How writes and reads work").
 */
function fastImportEnv(): NodeJS.ProcessEnv {
  const env = gitEnv()
  const tune = 'glibc.malloc.trim_threshold=33554432'
  env.GLIBC_TUNABLES = env.GLIBC_TUNABLES ? `${env.GLIBC_TUNABLES}:${tune}` : tune
  return env
}

function sanitize(name: string): string {
  return name.replace(/[<>\n\r]/g, '').slice(0, 100) || 'svc'
}

function quotePath(p: string): string {
  // Paths are built from [A-Za-z0-9_.%-/] only (see ids.ts), so they never need C-style quoting.
  return p
}
