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

/**
 * Seeded random date, timestamp and interval expressions over the `times` table: random interval
 * literals (signed years, months, days, time and fractions) added to and subtracted from every
 * column type, scaled, compared, and taken apart with extract, date_part, date_trunc and age.
 */
export function randomDatetimeQueries(seed: number, count: number): string[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1))
  const interval = (): string => {
    const parts: string[] = []
    if (r() < 0.4) parts.push(`${int(-3, 3)} years`)
    if (r() < 0.5) parts.push(`${int(-14, 14)} mons`)
    if (r() < 0.5) parts.push(`${int(-40, 40)} days`)
    if (r() < 0.5) parts.push(`${pick(['', '-'])}${int(0, 30)}:${String(int(0, 59)).padStart(2, '0')}:${String(int(0, 59)).padStart(2, '0')}${r() < 0.3 ? `.${int(1, 999_999)}` : ''}`)
    if (r() < 0.2) parts.push(`${pick(['1.5', '0.25', '-2.75'])} ${pick(['days', 'hours', 'mons', 'years', 'weeks'])}`)
    return `interval '${parts.length > 0 ? parts.join(' ') : '0'}'`
  }
  const stamp = (): string => pick(['ts', 'tz', 'd', `timestamp '${int(1990, 2030)}-${int(1, 12)}-${int(1, 28)} ${int(0, 23)}:${int(10, 59)}'`])
  const field = (): string => pick(['year', 'month', 'day', 'hour', 'minute', 'second', 'epoch', 'dow', 'doy', 'quarter', 'week', 'isoyear', 'microseconds'])
  const expr = (): string => {
    switch (int(0, 11)) {
      case 0: {
        return `${pick(['ts', 'tz'])} + ${interval()}`
      }
      case 1: {
        return `${pick(['ts', 'tz', 'd'])} - ${interval()}`
      }
      case 2: {
        return `d ${pick(['+', '-'])} ${int(-400, 400)}`
      }
      case 3: {
        return `${stamp()} - ${stamp()}`
      }
      case 4: {
        return `iv ${pick(['+', '-'])} ${interval()}`
      }
      case 5: {
        return `iv ${pick(['*', '/'])} ${pick(['2', '3', '0.5', '1.5', '-1', '7'])}`
      }
      case 6: {
        return `extract(${field()} from ${pick(['ts', 'tz', 'iv'])})`
      }
      case 7: {
        return `date_part('${field()}', ${pick(['ts', 'tz'])})`
      }
      case 8: {
        return `date_trunc('${pick(['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year', 'decade'])}', ${pick(['ts', 'tz', 'iv'])})`
      }
      case 9: {
        return `age(ts, ${stamp() === 'd' ? 'd' : `timestamp '${int(1990, 2030)}-${int(1, 12)}-${int(1, 28)}'`})`
      }
      case 10: {
        return `${pick(['ts', 'tz', 'd'])} ${pick(['<', '>=', '='])} ${pick(['ts', 'tz', 'd'])} ${pick(['+', '-'])} ${interval()}`
      }
      default: {
        return `${interval()} ${pick(['<', '=', '>'])} iv`
      }
    }
  }
  const out: string[] = []
  for (let i = 0; i < count; i++) out.push(`SELECT id, ${expr()} AS x, ${expr()} AS y FROM times ORDER BY id`)
  return out
}
