import {fdatasync, mkdirSync, readdirSync, readFileSync, truncateSync} from 'node:fs'
import {type FileHandle, open, truncate, unlink} from 'node:fs/promises'
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

interface InFlight {
  batch: Queued[]
  done: Promise<void>
  end: number
  seg: Segment
}

const HEADER = 8
const MAX_SYNCS = 3
const SEGMENT_BYTES = 64 * 1024 * 1024

/**
 * Write-ahead log with group commit: every append waiting while an fsync runs is written and
 * synced by the next one, so one fdatasync acknowledges many writes. Records are
 * `[u32 length][u32 crc32][JSON]`; a torn or corrupt tail (a crash mid-append) ends the log.
 */
export class WriteAheadLog {
  fsyncs = 0
  private active: Segment | undefined
  private closed = false
  private fh: FileHandle | undefined
  private flushing = false
  /** A flush is queued for the check phase of this turn of the event loop. */
  private kicked = false
  /** fdatasyncs not yet called back, also those of batches already refused: the descriptor stays open for them. */
  private syncsRunning = 0
  private rotate = false
  private broken: EngineError | undefined
  private reopening: Promise<void> | undefined
  private queue: Queued[] = []
  private syncing: InFlight[] = []
  private segments: Segment[] = []

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
      let off = 0
      let maxSeq = 0
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
        entries.push(entry)
        maxSeq = Math.max(maxSeq, entry.seq)
        off += HEADER + len
      }
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
    while (this.flushing || this.syncing.length > 0 || this.syncsRunning > 0 || this.queue.length > 0) await new Promise((r) => setTimeout(r, 2))
    await this.fh?.close()
    this.fh = undefined
  }

  /** Deletes whole segments whose every entry is at or below `seq` (already in Git). */
  async release(seq: number): Promise<void> {
    // The segment list is updated before any await, so concurrent releases and appends never race on it.
    const drop = this.segments.filter((s) => s !== this.active && s.maxSeq <= seq)
    this.segments = this.segments.filter((s) => !drop.includes(s))
    // The active segment is retired by the next append once it is fully in Git, then deleted here later.
    if (this.active && this.active.maxSeq <= seq && this.active.size > 4 * 1024 * 1024) this.rotate = true
    await Promise.all(drop.map((s) => unlink(s.file).catch(() => {})))
  }

  get bytes(): number {
    return this.segments.reduce((n, s) => n + s.size, 0)
  }

  /**
   * Writes batches in order and keeps up to MAX_SYNCS fdatasyncs in flight: under a busy disk
   * an fsync waits mostly in the device queue, and a second one issued meanwhile covers the
   * next batch. An fsync that completes makes every batch written before it durable, so batches
   * are acknowledged strictly in log order.
   */
  private async flush(): Promise<void> {
    if (this.flushing) return
    this.flushing = true
    try {
      while (this.queue.length > 0 && this.syncing.length < MAX_SYNCS && !this.broken) {
        const batch = this.queue.splice(0)
        // A new segment starts only when nothing is in flight on the old file descriptor.
        const turnOver = !this.active || !this.fh || this.active.size >= SEGMENT_BYTES || this.rotate
        if (turnOver) {
          while (this.syncing.length > 0) await this.syncing[0].done
        }
        const seg = turnOver ? await this.segment().catch((error: unknown) => this.fail(batch, error)) : this.active
        if (!seg) break
        const buf = batch.length === 1 ? batch[0].buf : Buffer.concat(batch.map((b) => b.buf))
        const fh = this.fh!
        try {
          let off = 0
          // The thread pool writes: a write made by the loop itself measured no cheaper per SET, and
          // it can wait for the journal commit of an fdatasync in flight (up to 15 ms seen here).
          while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten
        } catch (error) {
          this.fail(batch, error)
          break
        }
        seg.size += buf.length
        const entry: InFlight = {batch, done: Promise.resolve(), end: seg.size, seg}
        entry.done = new Promise<void>((resolve) => {
          // The callback form: FileHandle.datasync() added a promise and its reactions per fsync.
          this.syncsRunning++
          fdatasync(fh.fd, (error) => {
            this.syncsRunning--
            // A batch already refused by an earlier failure (no longer in `syncing`) is not failed again.
            if (error) {
              if (this.syncing.includes(entry)) this.fail(batch, error)
            } else {
              this.fsyncs++
              this.acknowledge(entry)
            }
            resolve()
            if (this.queue.length > 0) this.kick()
          })
        })
        this.syncing.push(entry)
      }
    } finally {
      this.flushing = false
    }
  }

  private acknowledge(entry: InFlight): void {
    const i = this.syncing.indexOf(entry)
    if (i === -1) return
    for (const e of this.syncing.splice(0, i + 1)) {
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
      while (this.flushing || this.syncing.length > 0 || this.syncsRunning > 0) await new Promise((r) => setTimeout(r, 2))
      await this.fh?.close().catch(() => {})
      this.fh = undefined
      const seg = this.active
      if (seg) {
        await truncate(seg.file, seg.durable)
        seg.size = seg.durable
        this.fh = await open(seg.file, 'a')
        await this.fh.datasync()
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
    if (this.active && this.fh && this.active.size < SEGMENT_BYTES && !this.rotate) return this.active
    this.rotate = false
    await this.fh?.close()
    const last = this.segments.at(-1)
    const n = last ? Number(last.file.slice(-16, -4)) + 1 : 1
    const seg: Segment = {durable: 0, file: join(this.dir, `${String(n).padStart(12, '0')}.log`), maxSeq: 0, size: 0}
    this.fh = await open(seg.file, 'a')
    // A new file's directory entry must be durable too, or a crash could lose the whole segment.
    const dirFh = await open(this.dir, 'r')
    await dirFh.sync().finally(() => dirFh.close())
    this.segments.push(seg)
    this.active = seg
    return seg
  }
}
