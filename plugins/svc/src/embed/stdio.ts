import type {Readable, Writable} from 'node:stream'

import type {Engine} from '../engine/types.js'
import {jsonValue} from '../query/json-value.js'
import {answer, errorReply, type ExtraOperations, kindOf, parseRequest, type Request} from './dispatch.js'
import {AnswerBuffer} from './answers.js'
import {RequestOrder} from './order.js'

export const PROTOCOL_VERSION = 1
/** A request line longer than this is refused (and skipped) so one client line cannot exhaust memory. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024

export interface EmbedStreams {
  input: Readable
  output: Writable
  /** The file descriptor behind `output` (stdout), written directly while the stream holds nothing. */
  outputFd?: number
}

/**
 * Serves the embedded protocol on a pair of streams until the input ends: every line is a request,
 * answered as soon as it completes, so a client may pipeline requests and match answers by id.
 * RequestOrder keeps pipelined requests' effects in the order they were sent. Resolves once every
 * answer is written; the caller then closes the engine.
 */
/** Stored documents are indented JSON; only the line breaks and indentation between tokens go (a JSON string cannot hold a raw line break). */
const oneLineOf = new WeakMap<Buffer, Buffer>()
/**
 * Kept per stored buffer (the engine's cache hands out the same one until the document changes),
 * so a hot document is made one line once and then sent as the same bytes: answers are built from
 * buffers, never from a string that would have to be encoded again on every read.
 */
function oneLine(raw: Buffer): Buffer {
  let line = oneLineOf.get(raw)
  if (line === undefined) {
    line = raw.includes(10) ? Buffer.from(raw.toString('utf8').replaceAll(/\r?\n[ \t]*/g, '')) : raw
    oneLineOf.set(raw, line)
  }
  return line
}

const NULL = Buffer.from('null')
const COMMA = 0x2c
/** Reused by every cached read: the documents of the answer being built. */
const found: Buffer[] = []

/**
 * Answers a `get` or `get_many` from memory without a turn of the event loop: its answer line,
 * built from the stored bytes as they are, straight into `answers`. False (and nothing added) when
 * the request needs the general path (a read from Git, or a parameter that earns an error reply).
 */
function cachedRead(engine: Engine, r: Request, answers: AnswerBuffer): boolean {
  const {branch, id, ids} = r.params
  if (branch !== undefined && branch !== null && typeof branch !== 'string') return false
  const options = {branch: branch ?? undefined}
  const many = r.op === 'get_many'
  const wanted = many ? ids : [id]
  if (!Array.isArray(wanted)) return false
  const head = `{"id":${JSON.stringify(r.id, jsonValue)},"result":${many ? '[' : ''}`
  // The head (ASCII but for a text id, hence byteLength), commas between documents, then `]}` (or `}`) and the line break.
  let bytes = Buffer.byteLength(head) + Math.max(wanted.length - 1, 0) + (many ? 3 : 2)
  found.length = wanted.length
  let cached = false
  try {
    for (let i = 0; i < wanted.length; i++) {
      const one: unknown = wanted[i]
      if (typeof one !== 'string') return false
      const raw = engine.getRawIfCached(one, options)
      if (raw === false) return false
      const doc = raw === undefined ? NULL : oneLine(raw)
      found[i] = doc
      bytes += doc.length
    }
    cached = true
  } catch {
    return false
  } finally {
    // Nothing is kept past this call, so the cache may let the buffers go.
    if (!cached) found.length = 0
  }
  const {at: start, buf} = answers.reserve(bytes)
  let at = start + buf.write(head, start, 'utf8')
  for (let i = 0; i < found.length; i++) {
    if (i > 0) buf[at++] = COMMA
    const doc = found[i]
    buf.set(doc, at)
    at += doc.length
  }
  found.length = 0
  if (many) buf[at++] = 0x5d
  buf[at++] = 0x7d
  buf[at] = 0x0a
  return true
}

export async function serveLines(engine: Engine, streams: EmbedStreams, extra: ExtraOperations = {}): Promise<void> {
  const {input, output} = streams
  const order = new RequestOrder()
  let waitingForDrain: Promise<void> | undefined

  // Answers finished in the same turn of the event loop leave in one write, not one syscall each.
  const answers = new AnswerBuffer(output, streams.outputFd, () => {
    if (!waitingForDrain) {
      // Stop reading until the client has taken our answers, so a client that never reads cannot grow our buffers.
      input.pause()
      waitingForDrain = new Promise((resolve) =>
        output.once('drain', () => {
          waitingForDrain = undefined
          input.resume()
          resolve()
        }),
      )
    }
  })
  const send = (reply: unknown): void => answers.text(JSON.stringify(reply, jsonValue) + '\n')

  const handle = (line: string): void => {
    if (line.trim() === '') return
    let request
    try {
      request = parseRequest(line)
    } catch (error) {
      send(errorReply(error, (error as {requestId?: null}).requestId ?? null))
      return
    }
    const r = request
    if ((r.op === 'get' || r.op === 'get_many') && order.readMayRunNow() && cachedRead(engine, r, answers)) return
    void order.schedule(kindOf(r.op), () => answer(engine, r, extra)).then(send)
  }

  let pending: Buffer[] = []
  let pendingBytes = 0
  let skipping = false
  for await (const chunk of input as AsyncIterable<Buffer>) {
    let start = 0
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const part = chunk.subarray(start, nl)
      start = nl + 1
      if (skipping) {
        skipping = false
        continue
      }
      const line = pendingBytes === 0 ? part.toString('utf8') : Buffer.concat([...pending, part]).toString('utf8')
      pending = []
      pendingBytes = 0
      handle(line)
    }
    if (start < chunk.length && !skipping) {
      pending.push(chunk.subarray(start))
      pendingBytes += chunk.length - start
      if (pendingBytes > MAX_LINE_BYTES) {
        pending = []
        pendingBytes = 0
        skipping = true
        send({error: {code: 'too_large', message: `a request line may hold at most ${MAX_LINE_BYTES} bytes`}, id: null})
      }
    }
  }
  if (pendingBytes > 0) handle(Buffer.concat(pending).toString('utf8'))
  await order.idle()
}
