/**
 * Upstream URLs as they may be shown: in errors, logs, `/health`, `gw servers`, audit lines.
 * Hosted MCP services hand out URLs with a key in the path or the query, so every query value,
 * any user:password part and each path segment that looks like a key are replaced by `***`.
 * A `${NAME}` placeholder of servers.json names a variable, not its value, and is kept.
 */
export function maskUrl(url: string): string {
  // Placeholders are set aside first: URL parsing would percent-encode their braces.
  const names: string[] = []
  const bare = url.replaceAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => `gwvar${names.push(name) - 1}gwvar`)
  let u: URL
  try {
    u = new URL(bare)
  } catch {
    return '(invalid URL)'
  }
  return restore(masked(u), names)
}

const restore = (text: string, names: string[]): string => text.replaceAll(/gwvar(\d+)gwvar/g, (_, i: string) => `\${${names[Number(i)]}}`)

function masked(u: URL): string {
  const origin = `${u.protocol}//${u.username || u.password ? '***@' : ''}${u.host}`
  const path = u.pathname
    .split('/')
    .map((segment) => (looksSecret(decodeSafe(segment)) ? '***' : segment))
    .join('/')
  const query = [...u.searchParams.keys()].map((k) => `${encodeURIComponent(k)}=***`).join('&')
  return `${origin}${path}${query ? `?${query}` : ''}`
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/**
 * A path segment that is probably a credential: long, made of token characters, and mixing
 * letters with digits (`sk_live_4eC39HqLyjWDarjtT1zdp7dc`, a UUID, hex), or very long. Words and
 * version segments (`mcp`, `v1`, `server-name`) stay readable.
 */
function looksSecret(segment: string): boolean {
  if (/^gwvar\d+gwvar$/.test(segment)) return false
  if (segment.length >= 40) return true
  return segment.length >= 16 && /^[\w.~+=:-]+$/.test(segment) && /\d/.test(segment) && /[A-Za-z]/.test(segment)
}

/** `text` with every occurrence of the real (resolved) URL replaced by its masked form. */
export function scrubUrl(text: string, url: string, shown = maskUrl(url)): string {
  return url ? text.split(url).join(shown) : text
}
