import {rmSync} from 'node:fs'
import {join} from 'node:path'

import {performance} from 'node:perf_hooks'

import {whenQuiet} from './background-gate.js'
import {git} from './git.js'
import {HistoryStore, type StoredCommit} from './history-store.js'
import {HistoryWorker} from './history-worker.js'
import {refHeads} from './open.js'
import type {Logger, WriteMeta} from './types.js'

/** Where the history indexes live under the index directory: `.history/<branch>.sqlite` (a branch name never starts with a dot, so no full-text index folder can clash). */
export const HISTORY_DIR = '.history'

interface Slot {
  /** The catch-up running or last run (never rejects). */
  current: Promise<void>
  /** A catch-up queued behind `current`, not started yet: later callers share it. */
  queued?: Promise<void>
  /** Set while the branch is indexed from its first commit: reads walk Git meanwhile. */
  fullBuild: boolean
  /** The value of `generation` when the last catch-up started: a read needs none while it is current. */
  seen: number
  name: string
  /** Reads waiting for this branch's catch-up: it is not held for other requests meanwhile. */
  readers: number
  store?: HistoryStore
}

/** How a catch-up right after open waits for the requests to pause (background-gate.ts whenQuiet). */
export interface StartupWait {
  /** The pause, in ms. */
  quietMs: number
  /** The longest wait from open: under steady requests the catch-up starts then all the same. */
  maxWaitMs: number
  /** False while the other start-up work (the full-text catch-up) runs: the pause counts after it. */
  ready: () => boolean
}

export interface HistoryRecord {
  commit: string
  meta: WriteMeta
  time: string
}

/**
 * The per-branch history indexes (history-store.ts): kept in step with each branch's ref by
 * catching up on the commits after the last one indexed, in one `git log` pass (history-scan.ts)
 * parsed and written in a worker thread (history-worker.ts),
 * shortly after writes land and before every history or as-of read. A tip the ref no longer
 * descends from (a follower's forced update, a restore, a removed and recreated branch) is cut back
 * to where the two meet, or the branch is indexed again from its first commit. Anything it cannot
 * answer exactly (a cursor from another branch, times that go backwards) is answered by walking
 * Git, as before the index: `undefined` from a read means "ask Git".
 */
export class HistoryIndex {
  private readonly slots = new Map<string, Slot>()
  private readonly stopping = new AbortController()
  /** Parses and writes the catch-up's `git log` off the event loop's thread. */
  private readonly worker = new HistoryWorker()
  private timer: NodeJS.Timeout | undefined
  private closed = false
  /** Counts the times refs may have moved (touched()): reads skip the catch-up, and its `git for-each-ref`, while nothing did. */
  private generation = 0

  /** Until then (performance.now()) a catch-up waits for a pause in requests before it starts (StartupWait). */
  private startupUntil = 0
  /** Catch-ups running or waiting to start. */
  private active = 0

  constructor(private readonly o: {dir: string; logger: Logger; repo: string; startup?: StartupWait}) {}

  /** Starts catching every branch up in the background (a missing index is built then). */
  open(branches: Iterable<string>): void {
    if (this.o.startup) this.startupUntil = performance.now() + this.o.startup.maxWaitMs
    for (const b of branches) void this.catchUp(b)
  }

  /** True while a catch-up runs or waits to (start-up maintenance queues behind it: engine.ts startupGraph). */
  catchingUp(): boolean {
    return this.active > 0
  }

  /** Refs moved (a checkpoint landed writes, a follower moved a branch): the branches are caught up a little later, in the background, in one pass. */
  touched(): void {
    this.generation++
    if (this.timer || this.closed) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      for (const name of this.slots.keys()) void this.catchUp(name)
    }, 2000)
    this.timer.unref()
  }

  /**
   * Up to `limit` commits of the branch that changed one of `paths`, newest first, before the
   * `cursor` commit when given; undefined when the index cannot answer (ask Git).
   */
  async versions(branch: string, paths: [string, string], limit: number, cursor?: string): Promise<HistoryRecord[] | undefined> {
    const store = await this.ready(branch)
    if (!store) return undefined
    const full = cursor === undefined || /^[0-9a-f]{40}$/.test(cursor) ? cursor : await this.resolve(cursor)
    return this.guard(branch, store, () => {
      let before = store.commits + 1
      if (cursor !== undefined) {
        const pos = full === undefined ? undefined : store.position(full)
        if (pos === undefined) return undefined
        before = pos
      }
      return store.versions(paths, before, limit).map(record)
    })
  }

  /** The branch's last commit at time `t` (epoch ms), null when it has none that old, undefined to ask Git. */
  async commitAt(branch: string, t: number): Promise<null | string | undefined> {
    const store = await this.ready(branch)
    return store && this.guard(branch, store, () => store.commitAt(t))
  }

  /** A read the file refuses (damaged, deleted under it) is answered by Git, and the index is built again. */
  private guard<T>(branch: string, store: HistoryStore, read: () => T): T | undefined {
    try {
      return read()
    } catch (error) {
      const slot = this.slots.get(branch)
      this.o.logger.error('history index unreadable; rebuilding it from Git', {branch, error: (error as Error).message})
      if (slot?.store === store) {
        slot.store = undefined
        void slot.current.then(() => {
          store.close()
          this.remove(branch)
          void this.catchUp(branch)
        })
      }
      return undefined
    }
  }

  /** A new branch starts from a copy of its parent's index; the catch-up then moves it to the new branch's own tip. */
  fork(from: string, name: string): void {
    const source = this.slots.get(from)?.store
    if (!source || source.commits === 0 || this.slots.get(from)?.fullBuild) return
    try {
      source.copyTo(this.file(name))
    } catch (error) {
      this.o.logger.warn('history index not copied to the new branch; it is built from Git instead', {branch: name, error: (error as Error).message})
    }
    void this.catchUp(name)
  }

  /** Resolves once every branch known here has caught up with its ref (benchmarks, tests). */
  async caughtUp(branches: Iterable<string>): Promise<void> {
    await Promise.all([...branches].map((b) => this.waitFor(b, this.catchUp(b))))
  }

  /** Forgets a removed branch and deletes its file. */
  async drop(name: string): Promise<void> {
    const slot = this.slots.get(name)
    this.slots.delete(name)
    if (slot) {
      await slot.queued
      await slot.current
      slot.store?.close()
    }
    this.remove(name)
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    this.stopping.abort()
    for (const slot of this.slots.values()) {
      await slot.queued
      await slot.current
      slot.store?.close()
    }
    this.slots.clear()
    await this.worker.close()
  }

  /** Brings the branch's index up to its ref; resolves (never rejects) when done. */
  catchUp(name: string): Promise<void> {
    if (this.closed) return Promise.resolve()
    let slot = this.slots.get(name)
    if (!slot) {
      slot = {current: Promise.resolve(), fullBuild: false, name, readers: 0, seen: -1}
      this.slots.set(name, slot)
    }
    if (slot.queued) return slot.queued
    const s = slot
    this.active++
    const run = s.current.then(async () => {
      s.queued = undefined
      if (this.closed || this.slots.get(name) !== s) return
      s.seen = this.generation
      try {
        await this.catchUpOnce(name, s)
      } catch (error) {
        s.seen = -1
        if (this.closed || this.stopping.signal.aborted) return
        this.o.logger.warn('history index not caught up; history reads walk Git meanwhile', {branch: name, error: (error as Error).message})
      } finally {
        s.fullBuild = false
      }
    }).finally(() => this.active--)
    s.queued = run
    s.current = run
    return run
  }

  private async ready(branch: string): Promise<HistoryStore | undefined> {
    if (this.closed) return undefined
    // History reads are arriving: the index is wanted now, so no catch-up waits for a pause in
    // requests any more (a build in progress or waiting starts at once; this read walks Git if
    // the branch has no index yet). The bench guard's scale run reads history right after open.
    this.startupUntil = 0
    // A branch indexed from scratch (at a million commits, tens of seconds) is read through Git meanwhile.
    const known = this.slots.get(branch)
    if (known?.fullBuild) return undefined
    // Nothing moved since the last catch-up started: wait for it (it may still be running), no new one.
    const waitFor = !known || known.seen !== this.generation ? this.catchUp(branch) : (known.queued ?? known.current)
    await this.waitFor(branch, waitFor)
    const slot = this.slots.get(branch)
    return slot && !this.closed ? slot.store : undefined
  }

  /** Waits for a branch's catch-up as a reader: it no longer gives way to requests meanwhile. */
  private async waitFor(branch: string, catchUp: Promise<void>): Promise<void> {
    const waiting = this.slots.get(branch)
    if (waiting) waiting.readers++
    try {
      await catchUp
    } finally {
      if (waiting) waiting.readers--
    }
  }

  /**
   * Right after open a catch-up (at 100k commits, a 5 s build) starts once the requests pause
   * (StartupWait), so the first requests do not share the cores with it. A branch that has no
   * index yet is read through Git meanwhile, as during its build; the first history read ends the
   * wait of every branch (history reads are what the index is for).
   */
  private async startupWait(slot: Slot): Promise<void> {
    const w = this.o.startup
    const left = this.startupUntil - performance.now()
    if (!w || left <= 0) return
    const store = (slot.store ??= this.openStore(slot.name))
    slot.fullBuild = store.commits === 0
    // Cut short by a reader of this branch, or by any history read (ready() ends the window).
    await whenQuiet(w.quietMs, left, this.stopping.signal, w.ready, () => slot.readers > 0 || this.startupUntil === 0)
    // Waited out: later catch-ups start at once.
    this.startupUntil = 0
  }

  private async catchUpOnce(name: string, slot: Slot): Promise<void> {
    await this.startupWait(slot)
    if (this.closed || this.slots.get(name) !== slot) return
    const head = (await refHeads(this.o.repo)).get(name)
    if (!head) return
    const store = (slot.store ??= this.openStore(name))
    if (store.tip === head) return
    let range = [head]
    if (store.tip !== '') {
      const base = await git(this.o.repo, ['merge-base', store.tip, head]).then(
        (r) => r.stdout.trim(),
        () => '',
      )
      const pos = base === '' ? undefined : store.position(base)
      if (pos === undefined) store.truncate(0)
      else {
        if (base !== store.tip) {
          this.o.logger.info('branch moved off its indexed history; the history index is cut back to where they meet', {branch: name, commit: base})
          store.truncate(pos)
        }
        range = [`${base}..${head}`]
      }
    }
    slot.fullBuild = store.commits === 0
    const started = Date.now()
    let n: number
    try {
      n = await this.worker.scan(
        store.file,
        this.o.repo,
        range,
        this.stopping.signal,
        () => {
          if (this.slots.get(name) !== slot) throw new Error('branch removed')
        },
        () => slot.readers > 0,
      )
    } finally {
      store.reload()
    }
    if (slot.fullBuild) this.o.logger.info('history index built', {branch: name, commits: n, ms: Date.now() - started})
  }

  private openStore(name: string): HistoryStore {
    try {
      return new HistoryStore(this.file(name))
    } catch (error) {
      this.o.logger.warn('history index unreadable or of another format; rebuilding it from Git', {branch: name, error: (error as Error).message})
      this.remove(name)
      return new HistoryStore(this.file(name))
    }
  }

  private async resolve(commitish: string): Promise<string | undefined> {
    return git(this.o.repo, ['rev-parse', '--verify', '-q', `${commitish}^{commit}`]).then(
      (r) => r.stdout.trim(),
      () => undefined,
    )
  }

  private file(name: string): string {
    return join(this.o.dir, HISTORY_DIR, `${name}.sqlite`)
  }

  private remove(name: string): void {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${this.file(name)}${suffix}`, {force: true})
  }
}

function record(c: StoredCommit): HistoryRecord {
  return {
    commit: c.sha,
    meta: c.meta === null ? {} : (JSON.parse(c.meta) as WriteMeta),
    time: c.timeText ?? new Date(c.ms ?? c.ct * 1000).toISOString(),
  }
}
