/**
 * The receive buffer under the RESP and PostgreSQL parsers: socket chunks go in, the parser reads
 * frames at `pos`. A frame larger than what has arrived says how many bytes it needs (`need`), and
 * chunks are held apart until they are all there, so a large value costs one copy instead of one
 * copy per socket read.
 */
export class ByteBuffer {
  protected buf: Buffer = Buffer.alloc(0)
  /** Bytes from `pos` the frame being read needs; 0 when unknown. */
  protected need = 0
  protected pos = 0
  private parts: Buffer[] = []
  private partsLen = 0

  /** Bytes received and not yet taken by a complete frame. */
  get buffered(): number {
    return this.buf.length - this.pos + this.partsLen
  }

  feed(chunk: Buffer): void {
    if (this.need > 0 && this.buf.length - this.pos + this.partsLen + chunk.length < this.need) {
      this.parts.push(chunk)
      this.partsLen += chunk.length
      return
    }
    this.buf = this.pos >= this.buf.length && this.parts.length === 0 ? chunk : Buffer.concat([this.buf.subarray(this.pos), ...this.parts, chunk])
    this.parts = []
    this.partsLen = 0
    this.need = 0
    this.pos = 0
  }

  /** Bytes received but not yet consumed as a whole frame. */
  get pending(): number {
    return this.buf.length - this.pos + this.partsLen
  }
}
