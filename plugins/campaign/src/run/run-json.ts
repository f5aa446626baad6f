import {writeFileAtomicSync} from '@toolkit/kit'
import {join} from 'node:path'

import type {RunStatus, Totals, Workspace} from '../types.js'

export interface RunJson {
  /** The provider's endpoint when it is not the vendor's default; `--resume` reuses it. */
  base_url?: null | string
  exit_code: number
  model: null | string
  provider: string
  run_id: string
  status: RunStatus
  totals: Totals
  version: 1
}

export const EXIT_CODES: Record<RunStatus, number> = {incomplete: 1, invalid: 3, success: 0}

export function totalsOf(ws: Workspace): Totals {
  const missions = Object.values(ws.missions)
  const costs = missions.map((m) => m.usage.cost_usd)
  const reported = costs.filter((c): c is number => c !== null)
  return {
    cost_usd: reported.length === 0 ? null : Math.round(reported.reduce((a, b) => a + b, 0) * 1e6) / 1e6,
    // Every mission that did not finish: failed, interrupted while running, or never started.
    failed_missions: missions.filter((m) => m.status !== 'finished').length,
    input_tokens: missions.reduce((a, m) => a + m.usage.input_tokens, 0),
    missions: missions.length,
    output_tokens: missions.reduce((a, m) => a + m.usage.output_tokens, 0),
  }
}

export function writeRunJson(runDir: string, run: RunJson): void {
  writeFileAtomicSync(join(runDir, 'run.json'), `${JSON.stringify(run, null, 2)}\n`)
}
