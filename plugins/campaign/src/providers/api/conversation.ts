/**
 * The conversation of an API mission in a vendor-neutral form. Each client turns it into its
 * vendor's request on every call, so retrying, trimming and transcripts work the same for all.
 */
export interface ToolCall {
  id: string
  input: unknown
  /** Set when the model's arguments were not valid JSON: the call is answered with this error. */
  malformed?: string
  name: string
}

export interface ToolAnswer {
  /** The JSON of the tool's result, or the refusal's text. */
  content: string
  id: string
  isError: boolean
  /** The tool's name (Gemini's function responses carry it). */
  name: string
}

export interface Turn {
  calls: ToolCall[]
  results: ToolAnswer[]
  role: 'assistant' | 'user'
  text: string
}

export const TRIMMED = '[trimmed to keep the conversation within the context window; call the tool again if you need this result]'

/** Characters of tool results in the conversation (the bulk of the context). */
export function resultChars(turns: readonly Turn[]): number {
  let n = 0
  for (const t of turns) for (const r of t.results) n += r.content.length
  return n
}

/**
 * Replaces the oldest tool results (all but the last `keep` turns) with a note, until the
 * results fit in `maxChars`. Returns how many were trimmed; 0 when nothing more can go.
 */
export function trimResults(turns: Turn[], maxChars: number, keep = 2): number {
  let trimmed = 0
  let size = resultChars(turns)
  for (let i = 0; i < turns.length - keep && size > maxChars; i++) {
    for (const r of turns[i].results) {
      if (r.content === TRIMMED || size <= maxChars) continue
      size -= r.content.length - TRIMMED.length
      r.content = TRIMMED
      r.isError = false
      trimmed++
    }
  }
  return trimmed
}
