/** JSON-RPC "invalid params". */
export const INVALID_PARAMS = -32_602

/** Deepest nesting of tool arguments the proxy forwards; real tools take a handful of levels. */
export const MAX_ARGUMENT_DEPTH = 64

/** True when `value` nests objects or arrays deeper than `max` (iterative: no stack to overflow). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (typeof v !== 'object' || v === null) continue
    if (depth >= max) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1])
  }
  return false
}

interface Issue {
  message?: unknown
  path?: unknown
}

/**
 * A validation failure of request params as a short JSON-RPC error (`-32602`, the first problem
 * and where it is), instead of the validator's whole dump. Anything else is returned unchanged.
 */
export function shortParamsError(error: unknown, method: string): unknown {
  const e = error as {code?: unknown; issues?: unknown; message?: unknown; name?: unknown}
  let issues: Issue[] | undefined
  if (Array.isArray(e?.issues)) issues = e.issues as Issue[]
  else if (e?.code === INVALID_PARAMS && typeof e.message === 'string') {
    // The SDK puts the validator's issues, as JSON, after a prefix.
    const at = e.message.indexOf('[')
    try {
      issues = at === -1 ? undefined : (JSON.parse(e.message.slice(at)) as Issue[])
    } catch {
      issues = undefined
    }
    if (!issues && e.message.length <= 200) return error
  } else return error
  const first = issues?.[0]
  const where = Array.isArray(first?.path) && first.path.length > 0 ? first.path.join('.') : 'params'
  const what = typeof first?.message === 'string' ? first.message.split('\n')[0].slice(0, 120) : 'invalid'
  return Object.assign(new Error(`invalid params for ${method}: ${where}: ${what}`), {code: INVALID_PARAMS})
}
