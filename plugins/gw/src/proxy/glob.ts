/**
 * Compiles a name pattern where `*` matches any run of characters (including none) and every
 * other character matches itself, case-sensitively. Patterns are compiled once at start so a
 * per-request ACL decision is a few regex tests.
 */
export function compileGlob(pattern: string): (name: string) => boolean {
  if (pattern === '*') return () => true
  if (!pattern.includes('*')) return (name) => name === pattern
  const source = pattern
    .split('*')
    .map((part) => part.replaceAll(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*')
  const re = new RegExp(`^${source}$`, 's')
  return (name) => re.test(name)
}

export function compileGlobs(patterns: readonly string[]): (name: string) => boolean {
  const tests = patterns.map((p) => compileGlob(p))
  return (name) => tests.some((t) => t(name))
}
