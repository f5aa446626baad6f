/** Request bodies as JSON that svc can store exactly as written (engine/exact-json.ts), bounded in bytes. */
import type {IncomingMessage} from 'node:http'

import {BodyTooLargeError, readBody} from '@toolkit/kit'

import {checkExactJson} from '../../engine/exact-json.js'
import {pace} from '../../engine/loop-turns.js'
import {isEngineError} from '../../engine/errors.js'
import {HttpError} from './router.js'

export {DEFAULT_MAX_DEPTH} from '../../engine/exact-json.js'

export interface JsonLimits {
  maxBytes: number
  /** Deepest nesting of objects and arrays accepted. */
  maxDepth: number
}

export async function readJsonBody(req: IncomingMessage, limits: JsonLimits): Promise<unknown> {
  let body: Buffer
  try {
    body = await readBody(req, limits.maxBytes)
  } catch (error) {
    throw error instanceof BodyTooLargeError ? new HttpError(413, 'too_large', error.message) : error
  }
  // A large body is decoded, parsed and checked each in a slice of its own (engine/loop-turns.ts):
  // megabyte bodies from several clients arriving together held the loop for everyone (issue 24).
  const large = body.length >= LARGE_BODY_BYTES
  if (large) await pace()
  const text = body.toString('utf8')
  if (large) await pace()
  const value = parseJson(text)
  if (large) await pace()
  checkExact(text, limits.maxDepth)
  if (large) await pace()
  return value
}

/** Bodies at least this large take their own slices of the event loop. */
const LARGE_BODY_BYTES = 256 * 1024

/** JSON.parse; an empty or malformed body is a 400. */
function parseJson(text: string): unknown {
  if (text.trim() === '') throw new HttpError(400, 'invalid_json', 'request body is empty; send a JSON document')
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new HttpError(400, 'invalid_json', `request body is not valid JSON: ${(error as Error).message}`)
  }
}

/** Refuses (400) nesting past `maxDepth` and numbers a double cannot hold as written. */
function checkExact(text: string, maxDepth?: number): void {
  try {
    checkExactJson(text, maxDepth)
  } catch (error) {
    throw isEngineError(error) ? new HttpError(400, error.code, error.message) : error
  }
}
