import {close, constants, fdatasync, mkdirSync, open as openFd, readdirSync, readFileSync, truncateSync, write as fsWrite} from 'node:fs'
import {open, truncate, unlink} from 'node:fs/promises'
import {promisify} from 'node:util'
import {join} from 'node:path'
import {crc32} from 'node:zlib'

import {EngineError, withDiskFullRemedy} from './errors.js'

/** One logged operation. A batch is several ops that become one commit. */
export interface WalOp {
  /** An expire: the new expiry (epoch ms), or null to clear it. */
  at?: null | number
  /** UTF-8 JSON of the document for a put. */
  body?: string
  id: string
  /** A sweeper's delete: applies only while the document still expires at this time. */
  ifExpiredAt?: number
  /** A put that keeps the document's current expiry. */
  keepExpiry?: boolean
  op: 'delete' | 'expire' | 'put'
}

export interface WalEntry {
  branch: string
  meta?: {origin?: string; requestId?: string; user?: string}
  ops: WalOp[]
  seq: number
  /** Epoch milliseconds of acceptance; becomes the commit time. */
  time: number
}

interface Segment {
  /** Bytes up to the end of the last acknowledged record. */
  durable: number
  file: string
  maxSeq: number
  size: number
}

interface Queued {
  buf: Buffer
  onDurable(): void
  reject(e: Error): void
  resolve(): void
  seq: number
}

/** Where an acknowledged batch begins in its segment, and its first record's seq. */
interface Mark {
  offset: number
  seg: Segment
  seq: number
}

interface InFlight {
  batch: Queued[]
  buf: Buffer
  /** Written whole; acknowledged once every batch before it is too. */
  durable: boolean
  /** Offset just past the batch's records. */
  end: number
  fd: number
  seg: Segment
  written: number
}

const HEADER = 8
const MAX_SYNCS = 3
const SEGMENT_BYTES = 64 * 1024 * 1024
/** Every write returns once durable (data and the size needed to read it back), as fdatasync would make it. */
const SEGMENT_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_DSYNC

// Plain descriptors, not FileHandles: the hot path uses the callback `write` (no promise per batch).
const closeFd = promisify(close)
const openSegment = (file: string): Promise<number> => promisify(openFd)(file, SEGMENT_FLAGS, 0o644)
const datasync = promisify(fdatasync)

/**
 * Write-ahead log with group commit: every append waiting while a write runs goes out in the
 * next one, so one durable (O_DSYNC) write acknowledges many appends. Records are
 * `[u32 length][u32 crc32][JSON]`; a torn or corrupt tail (a crash mid-append) ends the log.
 */
export class WriteAheadLog {
  /** Durable writes made (each was a write and an fdatasync before; the name stays for the stats). */
  fsyncs = 0
  private active: Segment | undefined
  private closed = false
  private fd: number | undefined
  private flushing = false
  /** A flush is queued for the check phase of this turn of the event loop. */
  private kicked = false
  /** Writes not yet called back, also those of batches already refused: the descriptor stays open for them. */
  private writesRunning = 0
  /** Waiters for `writesRunning` to reach 0 (a segment's turn-over). */
  private idle: (() => void)[] = []
  private rotate = false
  private broken: EngineError | undefined
  private reopening: Promise<void> | undefined
  private queue: Queued[] = []
  private syncing: InFlight[] = []
  private segments: Segment[] = []
  /**
   * The start of each batch acknowledged since the last `release` (one per group, not per
   * record): `since` reads back from the batch that holds the first record asked for, not from
   * the start of a 64 MB segment.
   */
  private marks: Mark[] = []

  private constructor(private readonly dir: string) {}

  /** Opens the log and returns the entries it holds, oldest first. */
  static async open(dir: string): Promise<{entries: WalEntry[]; wal: WriteAheadLog}> {
    mkdirSync(dir, {recursive: true})
    const wal = new WriteAheadLog(dir)
    const entries = WriteAheadLog.scan(dir, true, wal.segments)
    return {entries, wal}
  }

  /** The entries of a log without opening it for writing and without repairing it (for diagnose). */
  static read(dir: string): WalEntry[] {
    return WriteAheadLog.scan(dir, false, [])
  }

  private static scan(dir: string, repair: boolean, segments: Segment[]): WalEntry[] {
    const entries: WalEntry[] = []
    const files = readdirSync(dir).filter((f) => /^\d{12}\.log$/.test(f)).sort()
    for (const f of files) {
      const file = join(dir, f)
      const data = readFileSync(file)
      let maxSeq = 0
      const off = parseRecords(data, (entry) => {
        entries.push(entry)
        maxSeq = Math.max(maxSeq, entry.seq)
      })
      // Anything after the last whole record was never acknowledged: cut it so appends stay parseable.
      if (repair && off < data.length) truncateSync(file, off)
      segments.push({durable: off, file, maxSeq, size: off})
    }
    return entries
  }

  /**
   * Resolves once the entry is on disk (fdatasync). `onDurable` runs first, synchronously and in
   * log order, so the caller applies entries in exactly the order they were logged.
   */
  append(entry: WalEntry, onDurable: () => void): Promise<void> {
    if (this.closed) return Promise.reject(new EngineError('closed', 'engine is closed'))
    if (this.broken) return this.reopen().then(() => (this.broken ? Promise.reject(this.broken) : this.append(entry, onDurable)))
    // The record is encoded in place after its header: a megabyte document is not copied again.
    const json = JSON.stringify(entry)
    const buf = Buffer.allocUnsafe(HEADER + Buffer.byteLength(json))
    const len = buf.write(json, HEADER)
    buf.writeUInt32LE(len, 0)
    buf.writeUInt32LE(crc32(buf.subarray(HEADER)), 4)
    return new Promise((resolve, reject) => {
      this.queue.push({buf, onDurable, reject, resolve, seq: entry.seq})
      this.kick()
    })
  }

  /**
   * Group commit per turn of the event loop, as redis' `appendfsync always` does in beforeSleep:
   * every append made while this turn's sockets are read (all clients' commands) waits for the
   * check phase of the same turn and goes out in one write and one fdatasync. Flushing at the
   * first append wrote and synced it alone, and the rest of the turn in the next batch. The check
   * phase follows the poll phase without waiting: no timer delays an acknowledgement.
   */
  private kick(): void {
    if (this.kicked || this.flushing) return
    this.kicked = true
    setImmediate(this.kickNow)
  }

  private readonly kickNow = (): void => {
    this.kicked = false
    void this.flush()
  }

  async close(): Promise<void> {
    this.closed = true
    while (this.flushing || this.syncing.length > 0 || this.writesRunning > 0 || this.queue.length > 0) await new Promise((r) => setTimeout(r, 2))
    if (this.fd !== undefined) await closeFd(this.fd)
    this.fd = undefined
  }

  /** Deletes whole segments whose every entry is at or below `seq` (already in Git). */
  async release(seq: number): Promise<void> {
    // The segment list is updated before any await, so concurrent releases and appends never race on it.
    const drop = this.segments.filter((s) => s !== this.active && s.maxSeq <= seq)
    this.segments = this.segments.filter((s) => !drop.includes(s))
    // A batch is done with once the next one starts at or below seq + 1.
    let done = 0
    while (done + 1 < this.marks.length && this.marks[done + 1].seq <= seq + 1) done++
    if (done > 0) this.marks.splice(0, done)
    // The active segment is retired by the next append once it is fully in Git, then deleted here later.
    if (this.active && this.active.maxSeq <= seq && this.active.size > 4 * 1024 * 1024) this.rotate = true
    await Promise.all(drop.map((s) => unlink(s.file).catch(() => {})))
  }

  /**
   * The acknowledged entries after `seq`, oldest first, read back from disk: what a restarted Git
   * writer is sent again, so the engine need not hold each commit until its checkpoint. Every
   * segment holding one is still here (`release` drops only segments wholly at or below the seq
   * Git has). A record that does not read back whole is an error, never a gap.
   */
  async since(seq: number): Promise<WalEntry[]> {
    let from: Mark | undefined
    for (const m of this.marks) {
      if (m.seq > seq + 1) break
      from = m
    }
    // Records before the first mark (logged before this open) are read from their segment's start.
    const first = from && this.segments.includes(from.seg) ? this.segments.indexOf(from.seg) : this.segments.findIndex((s) => s.maxSeq > seq)
    const out: WalEntry[] = []
    if (first === -1) return out
    for (const seg of this.segments.slice(first)) {
      const start = seg === from?.seg ? from.offset : 0
      if (seg.durable <= start) continue
      const data = Buffer.allocUnsafe(seg.durable - start)
      const fh = await open(seg.file, 'r')
      try {
        const {bytesRead} = await fh.read(data, 0, data.length, start)
        if (bytesRead !== data.length) throw new Error(`${seg.file} is ${start + bytesRead} bytes, ${seg.durable} were acknowledged`)
      } finally {
        await fh.close()
      }
      const end = parseRecords(data, (e) => {
        if (e.seq > seq) out.push(e)
      })
      if (end !== data.length) throw new EngineError('unavailable', `write-ahead log ${seg.file} does not read back at byte ${start + end}`)
    }
    return out
  }

  get bytes(): number {
    return this.segments.reduce((n, s) => n + s.size, 0)
  }

  /**
   * Writes each batch at its own offset with one positional write on the O_DSYNC descriptor: the
   * write returns once the bytes and the file's new size are on disk, so a batch costs one job of
   * libuv's pool where `write` then `fdatasync` cost two (each a thread woken, each a callback on
   * the loop). Up to MAX_SYNCS batches are in flight (under a busy disk a write waits mostly in
   * the device queue, and the next one issued meanwhile joins the same journal commit); they may
   * complete out of order, but a batch is acknowledged only once every batch before it is.
   */
  private async flush(): Promise<void> {
    if (this.flushing) return
    this.flushing = true
    try {
      while (this.queue.length > 0 && this.syncing.length < MAX_SYNCS && !this.broken) {
        // A new segment starts only when nothing is in flight on the old file descriptor.
        const turnOver = this.fd === undefined || !this.active || this.active.size >= SEGMENT_BYTES || this.rotate
        if (turnOver) {
          while (this.writesRunning > 0) await new Promise<void>((resolve) => this.idle.push(resolve))
          if (this.broken) break
        }
        const batch = this.queue.splice(0)
        const seg = turnOver ? await this.segment().catch((error: unknown) => this.fail(batch, error)) : this.active
        if (!seg) break
        const buf = batch.length === 1 ? batch[0].buf : Buffer.concat(batch.map((b) => b.buf))
        const entry: InFlight = {batch, buf, end: seg.size + buf.length, fd: this.fd!, seg, written: 0, durable: false}
        // The offset is taken now: later batches are written beside this one, never over it.
        seg.size = entry.end
        this.syncing.push(entry)
        this.write(entry)
      }
    } finally {
      this.flushing = false
    }
  }

  private write(entry: InFlight): void {
    this.writesRunning++
    const start = entry.end - entry.buf.length
    fsWrite(entry.fd, entry.buf, entry.written, entry.buf.length - entry.written, start + entry.written, (error, n) => {
      this.writesRunning--
      if (error) {
        // A batch already refused by an earlier failure (no longer in `syncing`) is not failed again.
        if (this.syncing.includes(entry)) this.fail(entry.batch, error)
      } else if ((entry.written += n) < entry.buf.length) {
        // A short write (a disk filling up) goes on where it stopped, or fails with the cause.
        if (this.syncing.includes(entry)) {
          this.write(entry)
          return
        }
      } else {
        this.fsyncs++
        entry.durable = true
        this.acknowledge()
      }
      if (this.writesRunning === 0) for (const resolve of this.idle.splice(0)) resolve()
      if (this.queue.length > 0) this.kick()
    })
  }

  /** Acknowledges the batches written whole at the head of the log, in log order. */
  private acknowledge(): void {
    while (this.syncing.length > 0 && this.syncing[0].durable) {
      const e = this.syncing.shift()!
      this.marks.push({offset: e.end - e.buf.length, seg: e.seg, seq: e.batch[0].seq})
      for (const b of e.batch) {
        e.seg.maxSeq = Math.max(e.seg.maxSeq, b.seq)
        e.seg.durable = e.end
        try {
          b.onDurable()
          b.resolve()
        } catch (error) {
          b.reject(error as Error)
        }
      }
    }
  }

  private fail(batch: Queued[], error: unknown): void {
    // After a failed write or fsync nothing later can be trusted: refuse further appends.
    this.broken = new EngineError('unavailable', withDiskFullRemedy(`write-ahead log append failed: ${(error as Error).message}`), {cause: error})
    for (const e of this.syncing.splice(0)) for (const b of e.batch) b.reject(this.broken)
    for (const b of batch) b.reject(this.broken)
    for (const b of this.queue.splice(0)) b.reject(this.broken)
  }

  /**
   * After a failed write or fsync (a full disk) the next append tries again: the active segment is
   * cut back to its last acknowledged record, so no torn or refused record stays before new ones,
   * and reopened. While that fails the log stays broken and appends are refused.
   */
  private reopen(): Promise<void> {
    this.reopening ??= (async () => {
      while (this.flushing || this.syncing.length > 0 || this.writesRunning > 0) await new Promise((r) => setTimeout(r, 2))
      if (this.fd !== undefined) await closeFd(this.fd).catch(() => {})
      this.fd = undefined
      const seg = this.active
      if (seg) {
        await truncate(seg.file, seg.durable)
        seg.size = seg.durable
        const fd = await openSegment(seg.file)
        // The cut itself must be durable before records are written past it again.
        await datasync(fd).catch(async (error: unknown) => {
          await closeFd(fd)
          throw error
        })
        this.fd = fd
      }
      this.broken = undefined
    })()
      .catch(() => {})
      .finally(() => {
        this.reopening = undefined
      })
    return this.reopening
  }

  private async segment(): Promise<Segment> {
    if (this.active && this.fd !== undefined && this.active.size < SEGMENT_BYTES && !this.rotate) return this.active
    this.rotate = false
    if (this.fd !== undefined) await closeFd(this.fd)
    this.fd = undefined
    const last = this.segments.at(-1)
    const n = last ? Number(last.file.slice(-16, -4)) + 1 : 1
    const seg: Segment = {durable: 0, file: join(this.dir, `${String(n).padStart(12, '0')}.log`), maxSeq: 0, size: 0}
    this.fd = await openSegment(seg.file)
    // A new file's directory entry must be durable too, or a crash could lose the whole segment.
    const dirFh = await open(this.dir, 'r')
    await dirFh.sync().finally(() => dirFh.close())
    this.segments.push(seg)
    this.active = seg
    return seg
  }
}

/**
 * Calls `onEntry` for each whole record of `data` in order and returns the offset past the last
 * one: a torn or corrupt record (a crash mid-append) ends the log there.
 */
function parseRecords(data: Buffer, onEntry: (e: WalEntry) => void): number {
  let off = 0
  while (off + HEADER <= data.length) {
    const len = data.readUInt32LE(off)
    const sum = data.readUInt32LE(off + 4)
    if (off + HEADER + len > data.length) break
    const payload = data.subarray(off + HEADER, off + HEADER + len)
    if (crc32(payload) !== sum) break
    let entry: WalEntry
    try {
      entry = JSON.parse(payload.toString('utf8')) as WalEntry
    } catch {
      break
    }
    onEntry(entry)
    off += HEADER + len
  }
  return off
}
