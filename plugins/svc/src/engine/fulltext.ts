import {createHash} from 'node:crypto'
import {existsSync, mkdirSync, readFileSync, rmSync} from 'node:fs'
import {join} from 'node:path'

import {writeFileAtomicSync} from '@toolkit/kit'

import {EngineError} from './errors.js'
import {TextIndex, type TextIndexJson} from './text-index.js'
import type {Logger} from './types.js'

export interface IndexStatus {
  documents: number
  /** Documents still to (re)index in the running catch-up. */
  pending: number
  /** `building`: no usable index yet (first build or rebuild); `catching-up`: usable, behind; `ready`. */
  state: 'building' | 'catching-up' | 'disabled' | 'ready'
}

/** Progress counters behind the `svc_index_*` metrics (the spec's `svc.index.*`). */
export interface IndexProgress {
  corruptDetected: number
  documentErrors: number
  documentsIndexed: number
  lastRunSeconds: number
  runs: number
}

export interface FullTextOptions {
  batchSize: number
  checkIntervalMs: number
  /** The sha a document has now, to drop results of reads that a newer write overtook. */
  currentSha(branch: string, id: string): string | undefined
  dir: string
  logger: Logger
  readBody(branch: string, id: string): Promise<{body: Buffer; sha: string} | undefined>
  saveIntervalMs: number
  /** id -> blob sha of every current document of a branch. */
  versions(branch: string): Map<string, string>
}

interface BranchIndex {
  dirty: boolean
  /** id -> sha of the version in the index. */
  indexed: Map<string, string>
  ms: TextIndex
  queue: string[]
  running: boolean
  /** Acknowledged writes not yet applied to the index (undefined = delete). */
  writes: Map<string, {body: Buffer; sha: string} | undefined>
  state: IndexStatus['state']
}

const FORMAT = 2

/** Every string, number and boolean in a document, the id's key included, as one text field. */
export function documentText(doc: unknown): string {
  const parts: string[] = []
  const walk = (v: unknown): void => {
    if (typeof v === 'string') parts.push(v)
    else if (typeof v === 'number' || typeof v === 'boolean') parts.push(String(v))
    else if (Array.isArray(v)) for (const x of v) walk(x)
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x)
  }
  walk(doc)
  return parts.join(' ')
}

/**
 * The full-text index: one TextIndex per branch (updated in place, where lunr would rebuild;
 * top-k search, where MiniSearch scores and sorts every match; see text-index.ts). Writes update it as they are acknowledged; a background task brings
 * it in line with the repository (at open, after a rebuild, and at every periodic check) by
 * comparing the blob sha it indexed for each document with the current one, in batches.
 */
export class FullTextIndex {
  readonly progress: IndexProgress = {corruptDetected: 0, documentErrors: 0, documentsIndexed: 0, lastRunSeconds: 0, runs: 0}
  private applyScheduled = false
  private branches = new Map<string, BranchIndex>()
  private closed = false
  private timers: NodeJS.Timeout[] = []

  constructor(private readonly o: FullTextOptions) {}

  addBranch(name: string): void {
    const b = this.fresh()
    this.branches.set(name, b)
    this.reconcile(name, b)
  }

  async close(): Promise<void> {
    this.closed = true
    for (const t of this.timers) clearInterval(t)
    for (const [name, b] of this.branches) if (b.dirty) this.save(name, b)
  }

  count(branch: string): number {
    const b = this.branches.get(branch)
    if (!b) return 0
    this.applyWrites(b)
    return b.ms.documentCount
  }

  dropBranch(name: string): void {
    this.branches.delete(name)
    rmSync(join(this.o.dir, name), {force: true, recursive: true})
  }

  /** Runs the consistency check now (what the hourly timer does). Resolves when caught up. */
  async check(): Promise<void> {
    for (const [name, b] of this.branches) this.reconcile(name, b)
    await this.idle()
  }

  /** Resolves once no catch-up is running. */
  async idle(timeoutMs = 600_000): Promise<void> {
    const until = Date.now() + timeoutMs
    while ([...this.branches.values()].some((b) => b.running) && Date.now() < until) await new Promise((r) => setTimeout(r, 5))
  }

  /**
   * Records a write; it is indexed off the request path (next turn of the event loop), and any
   * search or count applies what is still queued first, so search always sees acknowledged writes.
   */
  onWrite(branch: string, id: string, body: Buffer | undefined, sha: string | undefined): void {
    const b = this.branches.get(branch)
    if (!b) return
    b.writes.set(id, body === undefined || sha === undefined ? undefined : {body, sha})
    if (!this.applyScheduled) {
      this.applyScheduled = true
      setImmediate(() => {
        this.applyScheduled = false
        for (const x of this.branches.values()) this.applyWrites(x)
      })
    }
  }

  private applyWrites(b: BranchIndex): void {
    if (b.writes.size === 0) return
    b.dirty = true
    for (const [id, w] of b.writes) {
      if (w === undefined) {
        if (b.indexed.delete(id)) b.ms.remove(id)
      } else this.indexOne(b, id, w.body, w.sha)
    }
    b.writes.clear()
  }

  async open(branches: string[]): Promise<void> {
    mkdirSync(this.o.dir, {recursive: true})
    for (const name of branches) {
      const b = this.load(name) ?? this.fresh()
      this.branches.set(name, b)
      this.reconcile(name, b)
    }
    if (this.o.checkIntervalMs > 0) {
      this.timers.push(setInterval(() => {
        this.o.logger.info('periodic index check')
        for (const [name, b] of this.branches) this.reconcile(name, b)
      }, this.o.checkIntervalMs))
    }
    this.timers.push(setInterval(() => {
      for (const [name, b] of this.branches) if (b.dirty && !b.running) this.save(name, b)
    }, this.o.saveIntervalMs))
    for (const t of this.timers) t.unref()
  }

  search(branch: string, query: string, options: {limit: number; offset: number; table?: string}): {ids: Array<{id: string; score: number}>; total: number} {
    const b = this.branches.get(branch)
    if (!b) throw new EngineError('branch_not_found', `branch ${branch} has no index`)
    if (b.state === 'building') {
      throw new EngineError('unavailable', `the full-text index of branch ${branch} is being built (${b.ms.documentCount} documents so far, ${b.queue.length} to go); retry shortly`)
    }
    this.applyWrites(b)
    const prefix = options.table === undefined ? undefined : `${options.table}:`
    const r = b.ms.search(query, {accept: prefix === undefined ? undefined : (id) => id.startsWith(prefix), limit: options.limit, offset: options.offset})
    return {ids: r.hits, total: r.total}
  }

  status(branch: string): IndexStatus {
    const b = this.branches.get(branch)
    if (!b) return {documents: 0, pending: 0, state: 'disabled'}
    this.applyWrites(b)
    return {documents: b.ms.documentCount, pending: b.queue.length, state: b.state}
  }

  private fresh(): BranchIndex {
    return {dirty: true, indexed: new Map(), ms: new TextIndex(), queue: [], running: false, state: 'building', writes: new Map()}
  }

  private indexOne(b: BranchIndex, id: string, body: Buffer, sha: string): void {
    let doc: unknown
    try {
      doc = JSON.parse(body.toString('utf8'))
    } catch (error) {
      this.progress.documentErrors++
      this.o.logger.error('document could not be indexed', {error: (error as Error).message, id})
      return
    }
    b.ms.add(id, documentText(doc))
    b.indexed.set(id, sha)
  }

  private load(name: string): BranchIndex | undefined {
    const dir = join(this.o.dir, name)
    const file = join(dir, 'index.json')
    if (!existsSync(file)) {
      this.o.logger.info('no full-text index on disk; building it', {branch: name})
      return undefined
    }
    try {
      // One file, header line first, replaced atomically: a crash never pairs a header with other data.
      const raw = readFileSync(file)
      const nl = raw.indexOf(10)
      if (nl === -1) throw new Error('missing header')
      const meta = JSON.parse(raw.toString('utf8', 0, nl)) as {format?: number; sha256?: string}
      const data = raw.subarray(nl + 1)
      if (meta.format !== FORMAT) throw new Error(`unknown index format ${meta.format}`)
      if (createHash('sha256').update(data).digest('hex') !== meta.sha256) throw new Error('checksum mismatch')
      const parsed = JSON.parse(data.toString('utf8')) as {docs: Array<[string, string]>; index: TextIndexJson}
      const ms = TextIndex.fromJSON(parsed.index)
      return {dirty: false, indexed: new Map(parsed.docs), ms, queue: [], running: false, state: 'catching-up', writes: new Map()}
    } catch (error) {
      this.progress.corruptDetected++
      this.o.logger.error('corrupt full-text index detected; rebuilding it from the repository', {branch: name, error: (error as Error).message, path: dir})
      rmSync(dir, {force: true, recursive: true})
      return undefined
    }
  }

  private async process(name: string, b: BranchIndex): Promise<void> {
    b.running = true
    const started = Date.now()
    const total = b.queue.length
    this.o.logger.info('reindex started', {branch: name, documents: total})
    let indexed = 0
    try {
      while (b.queue.length > 0 && !this.closed && this.branches.get(name) === b) {
        const batch = b.queue.splice(0, this.o.batchSize)
        const reads = await Promise.all(batch.map((id) => (b.indexed.get(id) === this.o.currentSha(name, id) ? undefined : this.o.readBody(name, id).catch(() => null))))
        for (let i = 0; i < batch.length; i++) {
          const id = batch[i]
          const r = reads[i]
          const current = this.o.currentSha(name, id)
          if (current === undefined) {
            if (b.indexed.delete(id)) b.ms.remove(id)
          } else if (r === null) {
            this.progress.documentErrors++
            this.o.logger.error('document could not be read for indexing', {branch: name, id})
          } else if (r && r.sha === current && b.indexed.get(id) !== current) {
            this.indexOne(b, id, r.body, r.sha)
            indexed++
            this.progress.documentsIndexed++
          }
        }
        b.dirty = true
        // Yield so requests and writes keep flowing while a large index builds.
        await new Promise((r) => setImmediate(r))
      }
    } finally {
      b.running = false
    }
    if (this.closed || this.branches.get(name) !== b) return
    b.state = 'ready'
    this.progress.runs++
    this.progress.lastRunSeconds = (Date.now() - started) / 1000
    this.o.logger.info('reindex finished', {branch: name, documents: b.ms.documentCount, indexed, seconds: this.progress.lastRunSeconds})
    if (total > 0) this.save(name, b)
  }

  /** Queues every document whose indexed version differs from the current one; drops deleted ones. */
  private reconcile(name: string, b: BranchIndex): void {
    if (b.running) return
    const current = this.o.versions(name)
    for (const id of b.indexed.keys()) {
      if (!current.has(id)) {
        b.indexed.delete(id)
        b.ms.remove(id)
        b.dirty = true
      }
    }
    for (const [id, sha] of current) if (b.indexed.get(id) !== sha) b.queue.push(id)
    if (b.queue.length === 0) {
      b.state = 'ready'
      return
    }
    void this.process(name, b)
  }

  private save(name: string, b: BranchIndex): void {
    this.applyWrites(b)
    try {
      const dir = join(this.o.dir, name)
      mkdirSync(dir, {recursive: true})
      const data = Buffer.from(JSON.stringify({docs: [...b.indexed], index: b.ms.toJSON()}))
      const meta = {documents: b.ms.documentCount, format: FORMAT, savedAt: new Date().toISOString(), sha256: createHash('sha256').update(data).digest('hex')}
      // No fsync: the index is rebuilt from Git when a crash leaves it behind.
      writeFileAtomicSync(join(dir, 'index.json'), Buffer.concat([Buffer.from(`${JSON.stringify(meta)}\n`), data]), {fsync: false})
      b.dirty = false
    } catch (error) {
      this.o.logger.error('full-text index could not be saved', {branch: name, error: (error as Error).message})
    }
  }
}
