import {z} from 'zod'

import {CAMPAIGN_TOOLS} from './campaign-tools.js'
import {PLAN_TOOLS} from './plan-tools.js'
import type {Tool} from './tool.js'

export type MissionKind = 'campaign' | 'plan'

export interface ToolSpec {
  description: string
  /** JSON Schema (draft 2020-12) of the input, for API providers' tool definitions. */
  input_schema: Record<string, unknown>
  name: string
}

export function toolsFor(kind: MissionKind): Tool[] {
  return kind === 'plan' ? PLAN_TOOLS : CAMPAIGN_TOOLS
}

const cache = new Map<MissionKind, ToolSpec[]>()

/** The tools of a mission kind as JSON Schema, the form both API tool-use and MCP take. */
export function toolSpecs(kind: MissionKind): ToolSpec[] {
  let specs = cache.get(kind)
  if (!specs) {
    specs = toolsFor(kind).map((t) => ({description: t.description, input_schema: z.toJSONSchema(t.input, {io: 'input'}) as Record<string, unknown>, name: t.name}))
    cache.set(kind, specs)
  }
  return specs
}
