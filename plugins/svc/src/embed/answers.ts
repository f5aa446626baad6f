import {writeSync} from 'node:fs'
import type {Writable} from 'node:stream'

/** Above this the scratch buffer is let go after a flush, so one huge answer does not pin its memory. */
const KEEP_BYTES = 8 * 1024 * 1024

/**
 * The answers finished in one turn of the event loop, gathered in one scratch buffer that is
 * reused from turn to turn and leave in one write. A fresh buffer per answer (hundreds of KiB for
 * a `get_many`) cost the child page faults and garbage-collector work on every read (about a third
 * of its CPU in `--cpu-prof` and /proc/PID/stat), so answers are copied into memory already mapped.
 *
 * With `fd` (the child's stdout) the bytes are written straight to it while nothing is queued in
 * the stream; what the pipe does not take at once (the client is not reading) goes through the
 * stream, which keeps that buffer (the next answers get a new one); the caller waits for its
 * 'drain'. Without `fd` every flush hands the stream its buffer that way.
 */
export class AnswerBuffer {
  private scratch: Buffer = Buffer.allocUnsafe(256 * 1024)
  /** Buffers the stream has finished writing, ready to be the scratch again. */
  private readonly spare: Buffer[] = []
  private at = 0
  private scheduled = false

  constructor(
    private readonly output: Writable,
    private readonly fd: number | undefined,
    /** Called when the stream took bytes it could not pass on yet (wait for 'drain'). */
    private readonly onBackpressure: () => void,
  ) {}

  /** Room for `bytes` more at the end; returns the buffer and the offset to write them at. */
  reserve(bytes: number): {buf: Buffer; at: number} {
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(this.flush)
    }
    if (this.at + bytes > this.scratch.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, this.at + bytes))
      this.scratch.copy(bigger, 0, 0, this.at)
      this.scratch = bigger
    }
    const at = this.at
    this.at += bytes
    return {at, buf: this.scratch}
  }

  /** Gives back what a reservation did not use (its writer stopped early). */
  unreserve(to: number): void {
    this.at = to
  }

  text(line: string): void {
    const bytes = Buffer.byteLength(line)
    const {at, buf} = this.reserve(bytes)
    buf.write(line, at, bytes, 'utf8')
  }

  readonly flush = (): void => {
    this.scheduled = false
    let sent = 0
    const end = this.at
    if (this.fd !== undefined && this.output.writableLength === 0) {
      try {
        while (sent < end) sent += writeSync(this.fd, this.scratch, sent, end - sent)
      } catch {
        // EAGAIN (the pipe is full) or a closed pipe: the stream writes the rest, or reports the error as before.
      }
    }
    this.at = 0
    if (sent < end) {
      // The stream keeps the bytes until the pipe takes them: it gets this buffer, and later answers
      // another (one it has given back, so memory already mapped is reused).
      const held = this.scratch
      this.scratch = this.spare.pop() ?? Buffer.allocUnsafe(Math.min(held.length, KEEP_BYTES))
      const written = (): void => {
        if (held.length <= KEEP_BYTES && this.spare.length < 2) this.spare.push(held)
      }
      if (!this.output.write(held.subarray(sent, end), written)) this.onBackpressure()
    } else if (this.scratch.length > KEEP_BYTES) this.scratch = Buffer.allocUnsafe(256 * 1024)
  }
}
