/**
 * Seeded random queries over the `people` table for the differential suite: WHERE clauses built
 * from comparisons, NULL tests, IN lists, LIKE and three-valued AND/OR/NOT, with projections and
 * aggregates. The seed is fixed so a failure names a statement that reproduces.
 */

/** mulberry32: a small, well-known 32-bit PRNG; enough to vary queries reproducibly. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d_2b_79_f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

export function randomQueries(seed: number, count: number): string[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]
  const atom = (): string => {
    switch (Math.floor(r() * 8)) {
      case 0: {
        return `age ${pick(['<', '<=', '>', '>=', '=', '<>'])} ${Math.floor(r() * 60)}`
      }
      case 1: {
        return `${pick(['age', 'city', 'active', 'score', 'balance'])} IS ${pick(['', 'NOT '])}NULL`
      }
      case 2: {
        return `city ${pick(['=', '<>', '<', '>'])} '${pick(['Paris', 'Rome', 'Berlin', 'Tokyo', 'Oslo'])}'`
      }
      case 3: {
        return `id ${pick(['IN', 'NOT IN'])} (${Array.from({length: 1 + Math.floor(r() * 4)}, () => 1 + Math.floor(r() * 9)).join(', ')})`
      }
      case 4: {
        return `name ${pick(['LIKE', 'ILIKE', 'NOT LIKE'])} '${pick(['%a%', 'A%', '_o%', '%s', 'b%'])}'`
      }
      case 5: {
        return pick(['active', 'NOT active', 'active = true', 'active IS NOT FALSE'])
      }
      case 6: {
        return `age ${pick(['BETWEEN', 'NOT BETWEEN'])} ${Math.floor(r() * 30)} AND ${20 + Math.floor(r() * 40)}`
      }
      default: {
        return `score ${pick(['<', '>', '>='])} ${pick(['0', '2.5', '-1', '4.5'])}`
      }
    }
  }
  const pred = (depth: number): string => {
    if (depth <= 0 || r() < 0.35) return atom()
    const k = r()
    if (k < 0.15) return `NOT (${pred(depth - 1)})`
    return `(${pred(depth - 1)} ${k < 0.6 ? 'AND' : 'OR'} ${pred(depth - 1)})`
  }
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    const where = pred(3)
    switch (Math.floor(r() * 4)) {
      case 0: {
        out.push(`SELECT id FROM people WHERE ${where} ORDER BY id`)
        break
      }
      case 1: {
        out.push(`SELECT count(*), min(age), max(name), sum(age) FROM people WHERE ${where}`)
        break
      }
      case 2: {
        out.push(`SELECT city, count(*) FROM people WHERE ${where} GROUP BY city ORDER BY city`)
        break
      }
      default: {
        out.push(`SELECT id, ${where} AS p FROM people ORDER BY id`)
      }
    }
  }
  return out
}
