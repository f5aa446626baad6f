import {openEngine} from '../engine/index.js'
import {EngineError, isEngineError} from '../engine/errors.js'
import {createLogger, type LogLevel} from '../engine/logger.js'
import {extraOperations} from './extra.js'
import {PROTOCOL_VERSION, serveLines} from './stdio.js'

export interface EmbedOptions {
  dataDir: string
  logLevel?: LogLevel
  version: string
}

/**
 * `toolkit svc embed`: opens the data directory (the same single-instance rule as the server),
 * prints a ready line, serves requests from stdin until it closes, then flushes the write-ahead
 * log into Git and closes. Nothing but protocol lines is written to stdout; logs go to stderr.
 */
export async function runEmbedded(options: EmbedOptions): Promise<void> {
  const out = process.stdout
  let engine
  try {
    engine = await openEngine(options.dataDir, {logger: createLogger({level: options.logLevel ?? 'warn'})})
  } catch (error) {
    const e = isEngineError(error) ? error : new EngineError('internal', (error as Error).message)
    const message = e.code === 'locked' ? `${e.message} (a server? use connect(url) to reach it over REST)` : e.message
    out.write(JSON.stringify({error: {code: e.code, message}, ready: false}) + '\n')
    throw new EngineError(e.code, message)
  }
  const extra = extraOperations(engine, options.version)
  out.write(JSON.stringify({dataDir: options.dataDir, pid: process.pid, protocol: PROTOCOL_VERSION, ready: true, version: options.version}) + '\n')
  const stop = (): void => {
    process.stdin.destroy()
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  try {
    await serveLines(engine, {input: process.stdin, output: out, outputFd: 1}, extra)
  } finally {
    process.off('SIGTERM', stop)
    process.off('SIGINT', stop)
    await engine.close()
  }
}
