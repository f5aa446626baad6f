import type {z} from 'zod'

import type {Workspace} from '../types.js'

/** What a tool sees: the workspace it may change and the mission calling it. */
export interface ToolContext {
  /** Set by `finish`; the mission ends when its provider returns after this. */
  finished: boolean
  mission: string
  /** The slug of the campaign a `campaign:<slug>` mission works on. */
  slug: null | string
  ws: Workspace
}

/** A refused call: the message goes back to the model, the workspace is unchanged. */
export class Refusal extends Error {}

export interface Tool<S extends z.ZodType = z.ZodType> {
  description: string
  input: S
  /** Mutating tools save workspace.json after a successful call. */
  mutates: boolean
  name: string
  run(ctx: ToolContext, input: z.infer<S>): unknown
  summary(input: z.infer<S>): string
}

export function defineTool<S extends z.ZodType>(tool: Tool<S>): Tool {
  return tool as unknown as Tool
}
