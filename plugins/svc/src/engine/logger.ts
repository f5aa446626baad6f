import type {Logger} from './types.js'

export type LogLevel = 'debug' | 'error' | 'info' | 'warn'
const ORDER: Record<LogLevel, number> = {debug: 10, error: 40, info: 20, warn: 30}

export const LOG_LEVELS: LogLevel[] = ['debug', 'info', 'warn', 'error']

export const nullLogger: Logger = {
  child: () => nullLogger,
  debug() {},
  error() {},
  info() {},
  warn() {},
}

/**
 * A structured logger writing one line per event to a stream (stderr by default): JSON lines
 * (`{"time","level","ns","msg",...fields}`) or readable text. Secrets never reach it: callers
 * pass only non-secret fields.
 */
export function createLogger(options: {format?: 'json' | 'text'; level?: LogLevel; namespace?: string; write?: (line: string) => void}): Logger {
  const min = ORDER[options.level ?? 'info']
  const write = options.write ?? ((line: string) => process.stderr.write(line))
  const make = (ns: string): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
      if (ORDER[level] < min) return
      const time = new Date().toISOString()
      if (options.format === 'json') {
        write(`${JSON.stringify({time, level, ns, msg, ...fields})}\n`)
      } else {
        const extra = fields && Object.keys(fields).length > 0 ? ` ${Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ')}` : ''
        write(`${time} ${level.toUpperCase().padEnd(5)} ${ns} ${msg}${extra}\n`)
      }
    }
    return {
      child: (namespace: string) => make(namespace),
      debug: (m, f) => emit('debug', m, f),
      error: (m, f) => emit('error', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
    }
  }
  return make(options.namespace ?? 'svc')
}
