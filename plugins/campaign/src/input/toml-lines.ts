/**
 * smol-toml reports lines only for syntax errors. For schema errors (unknown key, wrong type) we
 * find the line of a dotted key path by scanning the text: table headers set the current table,
 * `[[x]]` headers count array elements, and `key =` lines match the last path segment.
 */
export function lineOfPath(text: string, path: readonly (number | string)[]): number | undefined {
  if (path.length === 0) return undefined
  const lines = text.split(/\r?\n/)
  const counts = new Map<string, number>()
  let table: (number | string)[] = []
  let best: number | undefined
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim()
    if (line.startsWith('#') || line === '') continue
    const arr = /^\[\[\s*([^\]]+?)\s*\]\]/.exec(line)
    const tbl = arr ? null : /^\[\s*([^\]]+?)\s*\]/.exec(line)
    if (arr) {
      const name = arr[1]
      const n = counts.get(name) ?? 0
      counts.set(name, n + 1)
      table = [...splitKey(name), n]
      if (samePrefix(path, table) && path.length === table.length) return i + 1
      if (samePrefix(path, table.slice(0, -1)) && path.length === table.length - 1) best ??= i + 1
      continue
    }
    if (tbl) {
      table = splitKey(tbl[1])
      if (samePrefix(path, table) && path.length === table.length) return i + 1
      continue
    }
    const kv = /^([A-Za-z0-9_\-."' ]+?)\s*=/.exec(line)
    if (!kv) continue
    const full = [...table, ...splitKey(kv[1])]
    if (samePrefix(path, full) && full.length <= path.length) {
      if (full.length === path.length) return i + 1
      best = i + 1
    }
  }
  // The key is missing: point at its table header when there is one.
  if (best === undefined && path.length > 1) return lineOfPath(text, path.slice(0, -1))
  return best
}

function splitKey(key: string): string[] {
  return key.split('.').map((k) => k.trim().replace(/^["']|["']$/g, ''))
}

function samePrefix(path: readonly (number | string)[], prefix: readonly (number | string)[]): boolean {
  if (prefix.length > path.length) return false
  return prefix.every((p, i) => String(p) === String(path[i]))
}
