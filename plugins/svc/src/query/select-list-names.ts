/**
 * The column names of a SELECT read from its text, for describing a statement that has no AST to
 * describe from (a utility statement, or one whose probe run failed): the top-level select list
 * split into items, and the name PostgreSQL gives each.
 */

/** Splits the top-level select list of a query into its items. */
export function selectItems(sql: string): string[] {
  const items: string[] = []
  let depth = 0
  let cur = ''
  let started = false
  let i = 0
  const lower = sql.toLowerCase()
  while (i < sql.length) {
    const c = sql[i]
    if (c === "'") {
      const e = sql.indexOf("'", i + 1)
      const end = e < 0 ? sql.length : e + 1
      cur += sql.slice(i, end)
      i = end
      continue
    }
    if (c === '"') {
      const e = sql.indexOf('"', i + 1)
      const end = e < 0 ? sql.length : e + 1
      cur += sql.slice(i, end)
      i = end
      continue
    }
    if (depth === 0 && /\s|^/.test(sql[i - 1] ?? ' ')) {
      if (!started && lower.startsWith('select', i)) {
        started = true
        i += 6
        continue
      }
      if (started && lower.startsWith('from', i) && /\s/.test(sql[i + 4] ?? ' ')) break
    }
    if (c === '(') depth++
    if (c === ')') depth--
    if (c === ',' && depth === 0 && started) {
      items.push(cur.trim())
      cur = ''
    } else if (started) cur += c
    i++
  }
  if (cur.trim()) items.push(cur.trim())
  return items
}

export function itemName(item: string): string {
  const quoted = /\bas\s+"([^"]+)"\s*$/i.exec(item)
  if (quoted) return quoted[1]
  const plain = /\bas\s+(\w+)\s*$/i.exec(item)
  if (plain) return plain[1]
  const ref = /(?:^|\.)(\w+)\s*$/.exec(item)
  if (ref) return ref[1]
  const fn = /(\w+)\s*\(/.exec(item)
  return fn ? fn[1] : '?column?'
}
