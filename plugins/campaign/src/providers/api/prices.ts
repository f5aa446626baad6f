/**
 * List prices in US dollars per million tokens, as the vendors publish them (checked 2026-11).
 * `cache_read` / `cache_write` are what cached prompt tokens cost; a model not in the table has
 * no price and its cost is reported as null. docs/campaign-providers.md shows the same table.
 */
export interface Price {
  cache_read: number
  cache_write: number
  input: number
  output: number
}

const anthropic = (input: number, output: number): Price => ({cache_read: input * 0.1, cache_write: input * 1.25, input, output})
const openai = (input: number, output: number, cached: number): Price => ({cache_read: cached, cache_write: input, input, output})
const gemini = (input: number, output: number): Price => ({cache_read: input * 0.25, cache_write: input, input, output})

export const PRICES: Readonly<Record<string, Price>> = {
  'claude-haiku-4-5': anthropic(1, 5),
  'claude-opus-4-1': anthropic(15, 75),
  'claude-opus-4-5': anthropic(5, 25),
  'claude-sonnet-4': anthropic(3, 15),
  'claude-sonnet-4-5': anthropic(3, 15),
  'gemini-2.5-flash': gemini(0.3, 2.5),
  'gemini-2.5-flash-lite': gemini(0.1, 0.4),
  'gemini-2.5-pro': gemini(1.25, 10),
  'gpt-4.1': openai(2, 8, 0.5),
  'gpt-4.1-mini': openai(0.4, 1.6, 0.1),
  'gpt-4o': openai(2.5, 10, 1.25),
  'gpt-4o-mini': openai(0.15, 0.6, 0.075),
  'gpt-5': openai(1.25, 10, 0.125),
  'gpt-5-mini': openai(0.25, 2, 0.025),
  'gpt-5-nano': openai(0.05, 0.4, 0.005),
}

export interface TokenCounts {
  /** Prompt tokens read from the cache. */
  cache_read: number
  /** Prompt tokens written to the cache. */
  cache_write: number
  /** Prompt tokens neither read from nor written to the cache. */
  input: number
  output: number
}

/** The price of a model, also under a dated name (`claude-haiku-4-5-20251001`). */
export function priceOf(model: string): Price | null {
  if (PRICES[model]) return PRICES[model]
  const undated = model.replace(/-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$/, '')
  return PRICES[undated] ?? null
}

export function costOf(model: string, t: TokenCounts): null | number {
  const p = priceOf(model)
  if (!p) return null
  return (t.input * p.input + t.cache_read * p.cache_read + t.cache_write * p.cache_write + t.output * p.output) / 1e6
}
