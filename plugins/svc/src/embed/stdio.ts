import type {Readable, Writable} from 'node:stream'

import type {Engine} from '../engine/types.js'
import {jsonValue} from '../query/json-value.js'
import {answer, errorReply, type ExtraOperations, kindOf, parseRequest} from './dispatch.js'
import {RequestOrder} from './order.js'

export const PROTOCOL_VERSION = 1
/** A request line longer than this is refused (and skipped) so one client line cannot exhaust memory. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024

export interface EmbedStreams {
  input: Readable
  output: Writable
}

/**
 * Serves the embedded protocol on a pair of streams until the input ends: every line is a request,
 * answered as soon as it completes, so a client may pipeline requests and match answers by id.
 * RequestOrder keeps pipelined requests' effects in the order they were sent. Resolves once every
 * answer is written; the caller then closes the engine.
 */
export async function serveLines(engine: Engine, streams: EmbedStreams, extra: ExtraOperations = {}): Promise<void> {
  const {input, output} = streams
  const order = new RequestOrder()
  let waitingForDrain: Promise<void> | undefined

  const send = (reply: unknown): void => {
    if (!output.write(JSON.stringify(reply, jsonValue) + '\n') && !waitingForDrain) {
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
  }

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
