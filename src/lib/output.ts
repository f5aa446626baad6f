import type {Output, OutputFormat, Palette, Spinner} from '@toolkit/kit'

import {Ansis} from 'ansis'
import type {Writable} from 'node:stream'

export interface OutputStreams {
  env?: Record<string, string | undefined>
  stderr?: Writable & {columns?: number; isTTY?: boolean}
  stdout?: Writable & {isTTY?: boolean}
}

interface ActiveSpinner {
  stop(): void
}

/** Spinners still turning; the error renderer stops them before it prints. */
const active = new Set<ActiveSpinner>()

export function stopSpinners(): void {
  for (const s of active) s.stop()
  active.clear()
}

/** Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function colorEnabled(stream: {isTTY?: boolean}, env: Record<string, string | undefined>): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true
  return Boolean(stream.isTTY) && env.TERM !== 'dumb'
}

function palette(enabled: boolean): Palette {
  const a = new Ansis(enabled ? 3 : 0)
  return {bold: (s) => a.bold(s), cyan: (s) => a.cyan(s), dim: (s) => a.dim(s), green: (s) => a.green(s), red: (s) => a.red(s), yellow: (s) => a.yellow(s)}
}

function textOf(record: Record<string, unknown>): string {
  return Object.entries(record)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('\n')
}

const quietSpinner: Spinner = {fail() {}, succeed() {}, update() {}}

export function createOutput(format: OutputFormat, streams: OutputStreams = {}): Output {
  const env = streams.env ?? process.env
  const stdout = streams.stdout ?? process.stdout
  const stderr = streams.stderr ?? process.stderr
  const color = palette(colorEnabled(stderr, env))
  // A terminal of no width (a pty nobody sized, as under `script` or some CI runners) would make
  // ora's line clearing loop forever, so the command never ended: no spinner there.
  const spinnersAllowed = format === 'text' && Boolean(stderr.isTTY) && (stderr.columns ?? 0) > 0 && env.CI === undefined

  return {
    color,
    format,
    log(message) {
      stderr.write(`${message}\n`)
    },
    record(record, text) {
      stdout.write(format === 'json' ? `${JSON.stringify(record)}\n` : `${text ?? textOf(record)}\n`)
    },
    spinner(text) {
      if (!spinnersAllowed) return quietSpinner
      return startSpinner(text, stderr)
    },
    warn(message) {
      stderr.write(`${color.yellow('Warning:')} ${message}\n`)
    },
  }
}

function startSpinner(text: string, stream: Writable): Spinner {
  // ora is only needed on an interactive terminal; loading it lazily keeps start-up fast.
  let ora: undefined | {fail(t?: string): void; stop(): void; succeed(t?: string): void; text: string}
  let pending = text
  const handle: ActiveSpinner = {stop: () => ora?.stop()}
  active.add(handle)
  const ready = import('ora').then(({default: make}) => {
    ora = make({color: 'cyan', stream, text: pending}).start()
  })
  const finish = (how: 'fail' | 'succeed', t?: string) => {
    active.delete(handle)
    void ready.then(() => ora?.[how](t))
  }
  return {
    fail: (t) => finish('fail', t),
    succeed: (t) => finish('succeed', t),
    update(t) {
      pending = t
      if (ora) ora.text = t
    },
  }
}
