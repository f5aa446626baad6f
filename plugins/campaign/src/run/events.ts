import {closeSync, existsSync, openSync, readFileSync, writeSync} from 'node:fs'

import type {Issue, Totals} from '../types.js'

export type RunEvent =
  | {input_tokens: number; mission: string; output_tokens: number; cost_usd: null | number; type: 'usage'}
  | {attempt: number; mission: string; type: 'mission_started'}
  | {errors: Issue[]; type: 'validation'; warnings: Issue[]}
  | {exit_code: number; ok: boolean; totals: Totals; type: 'run_finished'}
  | {mission: string; ok: boolean; reason: null | string; type: 'mission_finished'}
  | {mission: string; ok: boolean; summary: string; tool: string; type: 'tool_finished'}
  | {mission: string; summary: string; tool: string; type: 'tool_called'}
  | {mission: string; text: string; type: 'agent_text'}
  | {model: null | string; provider: string; run_dir: string; run_id: string; type: 'run_started'}
  | {name: string; detail: unknown; type: 'step'}
  | {ok: boolean; status: null | number; type: 'url_checked'; url: string}
  | {path: string; type: 'artifact_written'}

export interface EventLine {
  event: RunEvent
  seq: number
  ts: string
}

export type EventListener = (line: EventLine) => void

/**
 * Appends events to events.ndjson, one JSON object per line, numbered from 1. A resumed run
 * continues the numbering of the file it appends to. Each line is written with one write(2),
 * so a killed process leaves at most its last line short, which `lastSeq` skips.
 */
export class EventLog {
  private fd: number
  private seq: number

  constructor(
    readonly file: string,
    private readonly listeners: EventListener[] = [],
  ) {
    this.seq = existsSync(file) ? lastSeq(file) : 0
    this.fd = openSync(file, 'a')
  }

  close(): void {
    closeSync(this.fd)
  }

  emit(event: RunEvent): EventLine {
    this.seq++
    const line: EventLine = {seq: this.seq, ts: new Date().toISOString(), event}
    writeSync(this.fd, `${JSON.stringify(line)}\n`)
    for (const l of this.listeners) l(line)
    return line
  }
}

function lastSeq(file: string): number {
  const lines = readFileSync(file, 'utf8').split('\n')
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const seq = (JSON.parse(lines[i]) as {seq?: unknown}).seq
      if (typeof seq === 'number') return seq
    } catch {
      // a line cut short by a crash
    }
  }
  return 0
}
