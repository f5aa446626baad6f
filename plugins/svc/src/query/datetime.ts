/**
 * date, timestamp, timestamptz and interval as PostgreSQL 15 computes and prints them (DateStyle
 * ISO, IntervalStyle postgres, TimeZone UTC): input parsing, arithmetic, comparison, extract,
 * date_trunc and age. Timestamps are microseconds since 1970-01-01 UTC (bigint: a double holds
 * microseconds exactly only for about 285 years around 1970); an interval keeps months, days and
 * microseconds apart, as PostgreSQL does, so `1 mon` and `30 days` stay different values.
 */
import {SqlError} from './errors.js'

export const US_PER_SEC = 1_000_000n
export const US_PER_DAY = 86_400_000_000n
const US_PER_HOUR = 3_600_000_000n
const US_PER_MIN = 60_000_000n
/** Days from 1970-01-01 to 2000-01-01, PostgreSQL's epoch for binary dates and timestamps. */
export const PG_EPOCH_DAYS = 10_957

/**
 * 'infinity' and '-infinity' are PostgreSQL's own sentinels (the largest and smallest int32 days
 * and int64 microseconds since 2000-01-01) shifted to svc's 1970 epoch: they order after and
 * before every date, and the binary forms come out as PostgreSQL's.
 */
export const DATE_INFINITY = 2_147_483_647 + PG_EPOCH_DAYS
export const DATE_NEG_INFINITY = -2_147_483_648 + PG_EPOCH_DAYS
export const TS_INFINITY = 9_223_372_036_854_775_807n + BigInt(PG_EPOCH_DAYS) * US_PER_DAY
export const TS_NEG_INFINITY = -9_223_372_036_854_775_808n + BigInt(PG_EPOCH_DAYS) * US_PER_DAY

export class PgDate {
  constructor(readonly days: number) {}
  get finite(): boolean {
    return this.days !== DATE_INFINITY && this.days !== DATE_NEG_INFINITY
  }
  toJSON(): string {
    return this.toString()
  }
  toString(): string {
    if (!this.finite) return this.days > 0 ? 'infinity' : '-infinity'
    return dateText(this.days)
  }
}

export class PgTimestamp {
  constructor(
    readonly us: bigint,
    readonly zone: boolean,
  ) {}
  toJSON(): string {
    return this.toString()
  }
  get finite(): boolean {
    return this.us !== TS_INFINITY && this.us !== TS_NEG_INFINITY
  }
  toString(): string {
    if (!this.finite) return this.us > 0n ? 'infinity' : '-infinity'
    const days = floorDiv(this.us, US_PER_DAY)
    const rest = this.us - days * US_PER_DAY
    // The era goes last: `0044-03-15 01:02:03+00 BC`.
    const date = dateText(Number(days))
    const bc = date.endsWith(' BC')
    return `${bc ? date.slice(0, -3) : date} ${timeText(rest)}${this.zone ? '+00' : ''}${bc ? ' BC' : ''}`
  }
}

export class PgInterval {
  constructor(
    readonly months: number,
    readonly days: number,
    readonly us: bigint,
  ) {}
  toJSON(): string {
    return this.toString()
  }
  toString(): string {
    return intervalText(this)
  }
  /** The span used for ordering and equality: a month is 30 days, a day 24 hours (PostgreSQL's interval_cmp). */
  span(): bigint {
    return BigInt(this.months) * 30n * US_PER_DAY + BigInt(this.days) * US_PER_DAY + this.us
  }
}

export function isDatetime(v: unknown): v is PgDate | PgInterval | PgTimestamp {
  return v instanceof PgDate || v instanceof PgTimestamp || v instanceof PgInterval
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q
}

// Howard Hinnant's civil-date algorithms (proleptic Gregorian).
export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y
  const era = Math.floor(yy / 400)
  const yoe = yy - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146_097 + doe - 719_468
}

export function civilFromDays(z: number): {d: number; m: number; y: number} {
  const zz = z + 719_468
  const era = Math.floor(zz / 146_097)
  const doe = zz - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1
  const m = mp + (mp < 10 ? 3 : -9)
  return {d, m, y: m <= 2 ? era * 400 + yoe + 1 : era * 400 + yoe}
}

const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
export const monthDays = (y: number, m: number): number => (m === 2 ? (isLeap(y) ? 29 : 28) : [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1])

function dateText(days: number): string {
  const {d, m, y} = civilFromDays(days)
  const bc = y <= 0
  const year = String(bc ? 1 - y : y).padStart(4, '0')
  return `${year}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}${bc ? ' BC' : ''}`
}

/** HH:MM:SS[.ffffff] with trailing zeros of the fraction dropped, as PostgreSQL prints seconds. */
function timeText(us: bigint): string {
  const h = us / US_PER_HOUR
  const mi = (us % US_PER_HOUR) / US_PER_MIN
  const s = (us % US_PER_MIN) / US_PER_SEC
  const f = us % US_PER_SEC
  return `${pad2(h)}:${pad2(mi)}:${pad2(s)}${fraction(f)}`
}

const pad2 = (n: bigint | number): string => String(n).padStart(2, '0')
const fraction = (f: bigint): string => (f === 0n ? '' : `.${String(f).padStart(6, '0').replace(/0+$/, '')}`)

function intervalText(iv: PgInterval): string {
  const parts: string[] = []
  let before = false
  const add = (value: number, unit: string): void => {
    if (value === 0) return
    parts.push(`${before && value > 0 ? '+' : ''}${value} ${unit}${value === 1 ? '' : 's'}`)
    before = value < 0
  }
  add(Math.trunc(iv.months / 12), 'year')
  add(iv.months % 12, 'mon')
  add(iv.days, 'day')
  if (parts.length === 0 || iv.us !== 0n) {
    const neg = iv.us < 0n
    const a = neg ? -iv.us : iv.us
    parts.push(`${neg ? '-' : before ? '+' : ''}${pad2(a / US_PER_HOUR)}:${pad2((a % US_PER_HOUR) / US_PER_MIN)}:${pad2((a % US_PER_MIN) / US_PER_SEC)}${fraction(a % US_PER_SEC)}`)
  }
  return parts.join(' ')
}

// -----------------------------------------------------------------------------------------
// Input

/** Days of a civil date; `bc` counts the year before 1 AD as 1 BC (there is no year 0), down to 4713 BC. */
function checkedDays(y: number, m: number, d: number, input: string, type: string, bc = false): number {
  if (bc && y === 0) throw new SqlError('22008', `date/time field value out of range: "${input}"`)
  const year = bc ? 1 - y : y
  if (m < 1 || m > 12 || d < 1 || d > monthDays(year, m)) throw new SqlError('22008', `date/time field value out of range: "${input}"`)
  if (year < -4712 || year > 294_276 || (!bc && y < 1)) throw new SqlError('22008', `${type} out of range: "${input}"`)
  return daysFromCivil(year, m, d)
}

/** The era suffix of date input (`0044-03-15 BC`, `... AD`), removed; PostgreSQL accepts it at the end. */
function era(s: string): {bc: boolean; text: string} {
  const m = /\s+(bc|ad)$/i.exec(s)
  return m ? {bc: m[1].toLowerCase() === 'bc', text: s.slice(0, m.index)} : {bc: false, text: s}
}

/** `infinity` / `-infinity` input (PostgreSQL 15 has no `+infinity`), or undefined. */
function infinity(s: string): -1 | 1 | undefined {
  const t = s.toLowerCase()
  return t === 'infinity' ? 1 : t === '-infinity' ? -1 : undefined
}

const DATE_RE = /^(\d{4,6})-(\d{1,2})-(\d{1,2})/
const TIME_RE = /^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?/
const ZONE_RE = /^(?:z|utc|gmt|([+-])(\d{1,2})(?::?(\d{2}))?)$/i

function nowUs(): bigint {
  return BigInt(Date.now()) * 1000n
}

/** `'now'`, `'today'`, ... as a timestamp in microseconds, or undefined for other text. */
function specialUs(s: string, now: bigint): bigint | undefined {
  const today = floorDiv(now, US_PER_DAY) * US_PER_DAY
  switch (s.toLowerCase()) {
    case 'now': {
      return now
    }
    case 'today': {
      return today
    }
    case 'tomorrow': {
      return today + US_PER_DAY
    }
    case 'yesterday': {
      return today - US_PER_DAY
    }
    case 'epoch': {
      return 0n
    }
    default: {
      return undefined
    }
  }
}

function timeUs(h: string, mi: string, s: string | undefined, f: string | undefined, input: string): bigint {
  const hh = Number(h)
  const mm = Number(mi)
  const ss = Number(s ?? 0)
  if (hh > 24 || mm > 59 || ss > 60 || (hh === 24 && (mm > 0 || ss > 0))) throw new SqlError('22008', `date/time field value out of range: "${input}"`)
  // Fractions beyond microseconds round, as PostgreSQL does.
  const micro = f ? BigInt(Math.round(Number(`0.${f}`) * 1e6)) : 0n
  return BigInt(hh) * US_PER_HOUR + BigInt(mm) * US_PER_MIN + BigInt(ss) * US_PER_SEC + micro
}

const typeLabel = (zone: boolean): string => (zone ? 'timestamp with time zone' : 'timestamp without time zone')

/** timestamp / timestamptz input: ISO date, optional time (space or T), optional zone. */
export function parseTimestamp(input: string, zone: boolean, now = nowUs()): PgTimestamp {
  const {bc, text: s} = era(input.trim())
  const special = specialUs(s, now)
  if (special !== undefined && !bc) return new PgTimestamp(special, zone)
  const inf = bc ? undefined : infinity(s)
  if (inf !== undefined) return new PgTimestamp(inf > 0 ? TS_INFINITY : TS_NEG_INFINITY, zone)
  const dm = DATE_RE.exec(s)
  const bad = (): SqlError => new SqlError('22007', `invalid input syntax for type ${zone ? 'timestamp with time zone' : 'timestamp'}: "${input}"`)
  if (!dm) throw bad()
  let rest = s.slice(dm[0].length)
  let us = 0n
  if (/^[ T]/i.test(rest)) {
    const tm = TIME_RE.exec(rest.slice(1).trimStart())
    if (tm) {
      us = timeUs(tm[1], tm[2], tm[3], tm[4], input)
      rest = rest.slice(1).trimStart().slice(tm[0].length)
    }
  }
  rest = rest.trim()
  let offsetUs = 0n
  if (rest !== '') {
    const zm = ZONE_RE.exec(rest)
    if (!zm) throw bad()
    if (zm[1]) offsetUs = (zm[1] === '-' ? -1n : 1n) * (BigInt(zm[2]) * US_PER_HOUR + BigInt(zm[3] ?? 0) * US_PER_MIN)
  }
  const days = checkedDays(Number(dm[1]), Number(dm[2]), Number(dm[3]), input, typeLabel(zone), bc)
  // A timestamp without time zone ignores a zone in its input, as PostgreSQL does.
  return new PgTimestamp(BigInt(days) * US_PER_DAY + us - (zone ? offsetUs : 0n), zone)
}

/** date input: an ISO date, optionally followed by a time (ignored); `today`, `epoch`, ... */
export function parseDate(input: string, now = nowUs()): PgDate {
  const {bc, text: s} = era(input.trim())
  const special = specialUs(s, now)
  if (special !== undefined && !bc) return new PgDate(Number(floorDiv(special, US_PER_DAY)))
  const inf = bc ? undefined : infinity(s)
  if (inf !== undefined) return new PgDate(inf > 0 ? DATE_INFINITY : DATE_NEG_INFINITY)
  const dm = DATE_RE.exec(s)
  if (!dm) throw new SqlError('22007', `invalid input syntax for type date: "${input}"`)
  const rest = s.slice(dm[0].length)
  if (rest !== '' && !/^[ T]\s*\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?\s*(z|[+-]\d{1,2}(:?\d{2})?)?$/i.test(rest)) {
    throw new SqlError('22007', `invalid input syntax for type date: "${input}"`)
  }
  return new PgDate(checkedDays(Number(dm[1]), Number(dm[2]), Number(dm[3]), input, 'date', bc))
}

const UNIT_ALIASES: Record<string, string> = {
  c: 'century', cent: 'century', centuries: 'century', century: 'century',
  d: 'day', day: 'day', days: 'day',
  dec: 'decade', decade: 'decade', decades: 'decade', decs: 'decade',
  h: 'hour', hour: 'hour', hours: 'hour', hr: 'hour', hrs: 'hour',
  m: 'minute', microsecond: 'microsecond', microseconds: 'microsecond', mil: 'millennium', millennia: 'millennium', millennium: 'millennium', millenniums: 'millennium', millisecond: 'millisecond', milliseconds: 'millisecond', min: 'minute', mins: 'minute', minute: 'minute', minutes: 'minute', mon: 'month', month: 'month', months: 'month', mons: 'month', ms: 'millisecond', msec: 'millisecond', msecs: 'millisecond',
  s: 'second', sec: 'second', second: 'second', seconds: 'second', secs: 'second',
  us: 'microsecond', usec: 'microsecond', usecs: 'microsecond',
  w: 'week', week: 'week', weeks: 'week',
  y: 'year', year: 'year', years: 'year', yr: 'year', yrs: 'year',
}

/** A unit name of extract / date_trunc / interval input, in its canonical spelling. */
export function unitOf(name: string): string | undefined {
  const n = name.toLowerCase()
  return UNIT_ALIASES[n] ?? (['dow', 'isodow', 'doy', 'quarter', 'epoch', 'isoyear', 'julian', 'timezone', 'timezone_hour', 'timezone_minute'].includes(n) ? n : undefined)
}

const MASK: Record<string, number> = {century: 1 << 10, day: 1 << 3, decade: 1 << 9, hour: 1 << 4, microsecond: 1 << 8, millennium: 1 << 11, millisecond: 1 << 7, minute: 1 << 5, month: 1 << 1, second: 1 << 6, week: 1 << 2, year: 1}
const US_OF: Record<string, number> = {hour: 3_600_000_000, microsecond: 1, millisecond: 1000, minute: 60_000_000, second: 1_000_000}
const MONTHS_OF: Record<string, number> = {century: 1200, decade: 120, millennium: 12_000, month: 1, year: 12}

/** interval input in PostgreSQL's own form (`1 year 2 mons 3 days 04:05:06`, `@ 1 day ago`, `1.5 hours`) or ISO 8601 (`P1DT2H`). */
export function parseInterval(input: string): PgInterval {
  const bad = (): SqlError => new SqlError('22007', `invalid input syntax for type interval: "${input}"`)
  let s = input.trim().toLowerCase()
  if (s.startsWith('p')) return parseIsoInterval(s, bad)
  if (s.startsWith('@')) s = s.slice(1).trim()
  let ago = false
  if (/\bago$/.test(s)) {
    ago = true
    s = s.slice(0, -3).trim()
  }
  if (s === '') throw bad()
  // Fields are read first, then applied right to left with PostgreSQL's field masks: a unit given
  // twice is an error, and a time field (hh:mm:ss) sets the time part, so a fraction spilled into
  // time by a unit to its right is lost ('5:42:02 1.5 days' is 1 day 05:42:02), as in DecodeInterval.
  type Field = {sign: number; time: number} | {unit: string; val: number}
  const fields: Field[] = []
  const re = /\s*(?:([+-]?)(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d*)?))?|([+-]?(?:\d+\.?\d*|\.\d+))\s*([a-z]+)?)\s*/y
  while (re.lastIndex < s.length) {
    const m = re.exec(s)
    if (!m) throw bad()
    if (m[2] === undefined) {
      const unit = m[6] === undefined ? 'second' : UNIT_ALIASES[m[6]]
      if (!unit) throw bad()
      fields.push({unit, val: Number(m[5])})
    } else fields.push({sign: m[1] === '-' ? -1 : 1, time: Number(m[2]) * 3_600_000_000 + Number(m[3]) * 60_000_000 + Math.round(Number(m[4] ?? 0) * 1e6)})
  }
  let months = 0
  let days = 0
  let us = 0
  const any = fields.length > 0
  let mask = 0
  const claim = (bits: number): void => {
    if (mask & bits) throw bad()
    mask |= bits
  }
  for (let k = fields.length - 1; k >= 0; k--) {
    const f = fields[k]
    if ('time' in f) {
      claim(MASK.hour | MASK.minute | MASK.second | MASK.millisecond | MASK.microsecond)
      us = f.sign * f.time
      continue
    }
    const {unit, val} = f
    const frac = val - Math.trunc(val)
    claim(unit === 'second' && frac !== 0 ? MASK.second | MASK.millisecond | MASK.microsecond : MASK[unit])
    if (MONTHS_OF[unit]) {
      const mo = val * MONTHS_OF[unit]
      months += Math.trunc(mo)
      // A fraction of a month spills into days (30 a month), then into time.
      const d = (mo - Math.trunc(mo)) * 30
      days += Math.trunc(d)
      us += Math.round((d - Math.trunc(d)) * 86_400_000_000)
    } else if (unit === 'week' || unit === 'day') {
      const d = val * (unit === 'week' ? 7 : 1)
      days += Math.trunc(d)
      us += Math.round((d - Math.trunc(d)) * 86_400_000_000)
    } else if (US_OF[unit]) us += Math.round(Math.trunc(val) * US_OF[unit] + frac * US_OF[unit])
    else throw bad()
  }
  if (!any) throw bad()
  const sign = ago ? -1 : 1
  return new PgInterval(sign * months || 0, sign * days || 0, BigInt(sign * us || 0))
}

function parseIsoInterval(s: string, bad: () => SqlError): PgInterval {
  const m = /^p(?:(-?\d+(?:\.\d+)?)y)?(?:(-?\d+(?:\.\d+)?)m)?(?:(-?\d+(?:\.\d+)?)w)?(?:(-?\d+(?:\.\d+)?)d)?(?:t(?:(-?\d+(?:\.\d+)?)h)?(?:(-?\d+(?:\.\d+)?)m)?(?:(-?\d+(?:\.\d+)?)s)?)?$/.exec(s)
  if (!m || s === 'p' || s.endsWith('t')) throw bad()
  const n = (x: string | undefined): number => Number(x ?? 0)
  const mo = n(m[1]) * 12 + n(m[2])
  const d = n(m[3]) * 7 + n(m[4]) + (mo - Math.trunc(mo)) * 30
  const us = (d - Math.trunc(d)) * 86_400_000_000 + n(m[5]) * 3_600_000_000 + n(m[6]) * 60_000_000 + n(m[7]) * 1e6
  return new PgInterval(Math.trunc(mo), Math.trunc(d), BigInt(Math.round(us)))
}

// -----------------------------------------------------------------------------------------
// Conversions

export function toTimestamp(v: PgDate | PgTimestamp, zone: boolean): PgTimestamp {
  if (v instanceof PgTimestamp) return v.zone === zone ? v : new PgTimestamp(v.us, zone)
  if (!v.finite) return new PgTimestamp(v.days > 0 ? TS_INFINITY : TS_NEG_INFINITY, zone)
  return new PgTimestamp(BigInt(v.days) * US_PER_DAY, zone)
}

export function toDate(v: PgDate | PgTimestamp): PgDate {
  if (v instanceof PgDate) return v
  if (!v.finite) return new PgDate(v.us > 0n ? DATE_INFINITY : DATE_NEG_INFINITY)
  return new PgDate(Number(floorDiv(v.us, US_PER_DAY)))
}

// -----------------------------------------------------------------------------------------
// Arithmetic

function checkTs(us: bigint, zone: boolean): PgTimestamp {
  // PostgreSQL's range: 4713 BC to 294276 AD.
  if (us < -210_866_803_200_000_000n || us >= 9_224_318_016_000_000_000n) throw new SqlError('22008', 'timestamp out of range')
  return new PgTimestamp(us, zone)
}

/** timestamp + interval: months first (the day clamped to the month's end), then days, then time. */
export function addInterval(t: PgTimestamp, iv: PgInterval, sign = 1): PgTimestamp {
  // An infinite timestamp stays infinite, as in PostgreSQL.
  if (!t.finite) return t
  let us = t.us
  if (iv.months !== 0) {
    const days = floorDiv(us, US_PER_DAY)
    const time = us - days * US_PER_DAY
    const {d, m, y} = civilFromDays(Number(days))
    const total = y * 12 + (m - 1) + sign * iv.months
    const ny = Math.floor(total / 12)
    const nm = total - ny * 12 + 1
    us = BigInt(daysFromCivil(ny, nm, Math.min(d, monthDays(ny, nm)))) * US_PER_DAY + time
  }
  us += BigInt(sign * iv.days) * US_PER_DAY + BigInt(sign) * iv.us
  return checkTs(us, t.zone)
}

/** PostgreSQL's interval_justify_hours: whole days out of the time part, both parts of one sign. */
export function justifyHours(iv: PgInterval): PgInterval {
  let days = iv.days + Number(iv.us / US_PER_DAY)
  let us = iv.us % US_PER_DAY
  if (days > 0 && us < 0n) {
    us += US_PER_DAY
    days--
  } else if (days < 0 && us > 0n) {
    us -= US_PER_DAY
    days++
  }
  return new PgInterval(iv.months, days, us)
}

/** PostgreSQL's interval_justify_days: whole 30-day months out of the days. */
export function justifyDays(iv: PgInterval): PgInterval {
  let months = iv.months + Math.trunc(iv.days / 30)
  let days = iv.days % 30
  if (months > 0 && days < 0) {
    days += 30
    months--
  } else if (months < 0 && days > 0) {
    days -= 30
    months++
  }
  return new PgInterval(months, days, iv.us)
}

export function justifyInterval(iv: PgInterval): PgInterval {
  const total = iv.us + BigInt(iv.days) * US_PER_DAY
  let months = iv.months + Math.trunc(Number(total / US_PER_DAY) / 30)
  let days = Number(total / US_PER_DAY) % 30
  let us = total % US_PER_DAY
  if (months > 0 && (days < 0 || (days === 0 && us < 0n))) {
    days += 30
    months--
  } else if (months < 0 && (days > 0 || (days === 0 && us > 0n))) {
    days -= 30
    months++
  }
  if (days > 0 && us < 0n) {
    us += US_PER_DAY
    days--
  } else if (days < 0 && us > 0n) {
    us -= US_PER_DAY
    days++
  }
  return new PgInterval(months, days, us)
}

export function intervalAdd(a: PgInterval, b: PgInterval, sign = 1): PgInterval {
  return new PgInterval(a.months + sign * b.months, a.days + sign * b.days, a.us + BigInt(sign) * b.us)
}

export function intervalNegate(a: PgInterval): PgInterval {
  return new PgInterval(-a.months || 0, -a.days || 0, -a.us)
}

/** interval * factor, cascading fractional months into days and fractional days into time (interval_mul). */
export function intervalMul(a: PgInterval, factor: number): PgInterval {
  if (!Number.isFinite(factor)) throw new SqlError('22008', 'interval out of range')
  const monthF = a.months * factor
  const dayF = a.days * factor
  const months = Math.trunc(monthF)
  let days = Math.trunc(dayF)
  const monthRemDays = (monthF - months) * 30
  let secRem = dayF - days + (monthRemDays - Math.trunc(monthRemDays))
  secRem = rint(secRem * 86_400 * 1e6) / 1e6
  if (Math.abs(secRem) >= 86_400) {
    days += Math.trunc(secRem / 86_400)
    secRem -= Math.trunc(secRem / 86_400) * 86_400
  }
  days += Math.trunc(monthRemDays)
  const us = rint(Number(a.us) * factor + secRem * 1e6)
  return new PgInterval(months || 0, days || 0, BigInt(us))
}

/** C's rint: to the nearest integer, halves to even, as PostgreSQL rounds interval arithmetic. */
function rint(n: number): number {
  const r = Math.round(n)
  return Math.abs(n % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r
}

export function intervalDiv(a: PgInterval, divisor: number): PgInterval {
  if (divisor === 0) throw new SqlError('22012', 'division by zero')
  return intervalMul(a, 1 / divisor)
}

/** The difference of two timestamps, as PostgreSQL's timestamp_mi (days and time, no months). */
export function timestampDiff(a: PgTimestamp, b: PgTimestamp): PgInterval {
  if (!a.finite || !b.finite) throw new SqlError('22008', 'cannot subtract infinite timestamps')
  return justifyHours(new PgInterval(0, 0, a.us - b.us))
}

/**
 * age(a, b): whole years, months and days between two timestamps counted on the calendar
 * (PostgreSQL's timestamp_age), borrowing days from the month of the earlier one.
 */
export function age(a: PgTimestamp, b: PgTimestamp): PgInterval {
  const f = (t: PgTimestamp): {d: number; f: bigint; h: number; m: number; mi: number; s: number; y: number} => {
    const days = floorDiv(t.us, US_PER_DAY)
    const rest = t.us - days * US_PER_DAY
    const c = civilFromDays(Number(days))
    return {...c, f: rest % US_PER_SEC, h: Number(rest / US_PER_HOUR), mi: Number((rest % US_PER_HOUR) / US_PER_MIN), s: Number((rest % US_PER_MIN) / US_PER_SEC)}
  }
  const t1 = f(a)
  const t2 = f(b)
  let fsec = t1.f - t2.f
  let sec = t1.s - t2.s
  let min = t1.mi - t2.mi
  let hour = t1.h - t2.h
  let mday = t1.d - t2.d
  let mon = t1.m - t2.m
  let year = t1.y - t2.y
  const flip = a.us < b.us
  if (flip) {
    fsec = -fsec
    sec = -sec
    min = -min
    hour = -hour
    mday = -mday
    mon = -mon
    year = -year
  }
  while (fsec < 0n) {
    fsec += US_PER_SEC
    sec--
  }
  while (sec < 0) {
    sec += 60
    min--
  }
  while (min < 0) {
    min += 60
    hour--
  }
  while (hour < 0) {
    hour += 24
    mday--
  }
  while (mday < 0) {
    mday += flip ? monthDays(t1.y, t1.m) : monthDays(t2.y, t2.m)
    mon--
  }
  while (mon < 0) {
    mon += 12
    year--
  }
  const sign = flip ? -1 : 1
  const us = BigInt(hour) * US_PER_HOUR + BigInt(min) * US_PER_MIN + BigInt(sec) * US_PER_SEC + fsec
  return new PgInterval(sign * (year * 12 + mon) || 0, sign * mday || 0, BigInt(sign) * us)
}

/** date_trunc(unit, timestamp): the timestamp cut down to the start of its unit (a week starts on Monday). */
export function truncTimestamp(unit: string, t: PgTimestamp): PgTimestamp {
  const days = floorDiv(t.us, US_PER_DAY)
  const time = t.us - days * US_PER_DAY
  const {d, m, y} = civilFromDays(Number(days))
  const at = (yy: number, mm = 1, dd = 1): PgTimestamp => new PgTimestamp(BigInt(daysFromCivil(yy, mm, dd)) * US_PER_DAY, t.zone)
  const cut = (step: bigint): PgTimestamp => new PgTimestamp(days * US_PER_DAY + (time / step) * step, t.zone)
  switch (unit) {
    case 'microsecond': {
      return t
    }
    case 'millisecond': {
      return cut(1000n)
    }
    case 'second': {
      return cut(US_PER_SEC)
    }
    case 'minute': {
      return cut(US_PER_MIN)
    }
    case 'hour': {
      return cut(US_PER_HOUR)
    }
    case 'day': {
      return cut(US_PER_DAY)
    }
    case 'week': {
      const dow = (Number(days) + 3) % 7 < 0 ? ((Number(days) + 3) % 7) + 7 : (Number(days) + 3) % 7
      return new PgTimestamp(BigInt(Number(days) - dow) * US_PER_DAY, t.zone)
    }
    case 'month': {
      return at(y, m)
    }
    case 'quarter': {
      return at(y, Math.floor((m - 1) / 3) * 3 + 1)
    }
    case 'year': {
      return at(y)
    }
    case 'decade': {
      return at(Math.floor(y / 10) * 10)
    }
    case 'century': {
      return at(Math.floor((y - 1) / 100) * 100 + 1)
    }
    case 'millennium': {
      return at(Math.floor((y - 1) / 1000) * 1000 + 1)
    }
    default: {
      void d
      throw new SqlError('22023', `unit "${unit}" not recognized for type ${typeLabel(t.zone)}`)
    }
  }
}

/** interval(p): the time part rounded half away from zero to p fractional digits. */
export function roundInterval(iv: PgInterval, precision: number): PgInterval {
  const step = 10n ** BigInt(6 - Math.max(0, Math.min(6, precision)))
  const a = iv.us < 0n ? -iv.us : iv.us
  const r = ((a + step / 2n) / step) * step
  return new PgInterval(iv.months, iv.days, iv.us < 0n ? -r : r)
}

/** date_trunc(unit, interval). */
export function truncInterval(unit: string, iv: PgInterval): PgInterval {
  const years = Math.trunc(iv.months / 12)
  const cutUs = (step: bigint): PgInterval => new PgInterval(iv.months, iv.days, (iv.us / step) * step)
  switch (unit) {
    case 'microsecond': {
      return iv
    }
    case 'millisecond': {
      return cutUs(1000n)
    }
    case 'second': {
      return cutUs(US_PER_SEC)
    }
    case 'minute': {
      return cutUs(US_PER_MIN)
    }
    case 'hour': {
      return cutUs(US_PER_HOUR)
    }
    case 'day': {
      return new PgInterval(iv.months, iv.days, 0n)
    }
    case 'month': {
      return new PgInterval(iv.months, 0, 0n)
    }
    case 'quarter': {
      return new PgInterval(years * 12 + Math.trunc((iv.months % 12) / 3) * 3, 0, 0n)
    }
    case 'year': {
      return new PgInterval(years * 12, 0, 0n)
    }
    case 'decade': {
      return new PgInterval(Math.trunc(years / 10) * 120, 0, 0n)
    }
    case 'century': {
      return new PgInterval(Math.trunc(years / 100) * 1200, 0, 0n)
    }
    case 'millennium': {
      return new PgInterval(Math.trunc(years / 1000) * 12_000, 0, 0n)
    }
    default: {
      throw new SqlError('0A000', `unit "${unit}" not supported for type interval`)
    }
  }
}

/**
 * extract(field from value) as an exact decimal string and its scale: PostgreSQL 14+ answers
 * numeric (seconds with six decimals, the epoch of a timestamp too; a date's fields are whole).
 */
export function extractField(unit: string, v: PgDate | PgInterval | PgTimestamp): {scale: number; text: string} {
  const whole = (n: bigint | number): {scale: number; text: string} => ({scale: 0, text: String(n)})
  const micro = (us: bigint, scale = 6): {scale: number; text: string} => decimal(us, 6, scale)
  if (v instanceof PgInterval) {
    const years = Math.trunc(v.months / 12)
    switch (unit) {
      case 'microsecond': {
        return whole(v.us % US_PER_MIN)
      }
      case 'millisecond': {
        return decimal(v.us % US_PER_MIN, 3, 3)
      }
      case 'second': {
        return micro(v.us % US_PER_MIN)
      }
      case 'minute': {
        return whole((v.us % US_PER_HOUR) / US_PER_MIN)
      }
      case 'hour': {
        return whole(v.us / US_PER_HOUR)
      }
      case 'day': {
        return whole(v.days)
      }
      case 'month': {
        return whole(v.months % 12)
      }
      case 'quarter': {
        return whole(Math.trunc((v.months % 12) / 3) + 1)
      }
      case 'year': {
        return whole(years)
      }
      case 'decade': {
        return whole(Math.trunc(years / 10))
      }
      case 'century': {
        return whole(Math.trunc(years / 100))
      }
      case 'millennium': {
        return whole(Math.trunc(years / 1000))
      }
      case 'epoch': {
        // 365.25 days a year, 30 days a month, as PostgreSQL's interval_part.
        const yearsUs = BigInt(years) * 31_557_600_000_000n
        const monthsUs = BigInt(v.months % 12) * 30n * US_PER_DAY
        return micro(yearsUs + monthsUs + BigInt(v.days) * US_PER_DAY + v.us)
      }
      default: {
        throw new SqlError('0A000', `unit "${unit}" not supported for type interval`)
      }
    }
  }
  const isDate = v instanceof PgDate
  const us = isDate ? BigInt(v.days) * US_PER_DAY : v.us
  const days = floorDiv(us, US_PER_DAY)
  const time = us - days * US_PER_DAY
  const {d, m, y} = civilFromDays(Number(days))
  const dow = ((Number(days) + 4) % 7 + 7) % 7
  const timeUnit = ['microsecond', 'millisecond', 'second', 'minute', 'hour', 'timezone', 'timezone_hour', 'timezone_minute'].includes(unit)
  if (isDate && timeUnit) throw new SqlError('0A000', `unit "${unit}" not supported for type date`)
  if (!(v as PgTimestamp).zone && !isDate && unit.startsWith('timezone')) throw new SqlError('0A000', `unit "${unit}" not supported for type timestamp without time zone`)
  switch (unit) {
    case 'microsecond': {
      return whole(time % US_PER_MIN)
    }
    case 'millisecond': {
      return decimal(time % US_PER_MIN, 3, 3)
    }
    case 'second': {
      return micro(time % US_PER_MIN)
    }
    case 'minute': {
      return whole((time % US_PER_HOUR) / US_PER_MIN)
    }
    case 'hour': {
      return whole(time / US_PER_HOUR)
    }
    case 'timezone':
    case 'timezone_hour':
    case 'timezone_minute': {
      return whole(0)
    }
    case 'day': {
      return whole(d)
    }
    case 'month': {
      return whole(m)
    }
    case 'quarter': {
      return whole(Math.floor((m - 1) / 3) + 1)
    }
    case 'year': {
      return whole(y > 0 ? y : y - 1)
    }
    case 'decade': {
      return whole(Math.floor(y / 10))
    }
    case 'century': {
      return whole(y > 0 ? Math.floor((y + 99) / 100) : -Math.floor((99 - (y - 1)) / 100))
    }
    case 'millennium': {
      return whole(y > 0 ? Math.floor((y + 999) / 1000) : -Math.floor((999 - (y - 1)) / 1000))
    }
    case 'dow': {
      return whole(dow)
    }
    case 'isodow': {
      return whole(dow === 0 ? 7 : dow)
    }
    case 'doy': {
      return whole(Number(days) - daysFromCivil(y, 1, 1) + 1)
    }
    case 'week': {
      return whole(isoWeek(Number(days)).week)
    }
    case 'isoyear': {
      return whole(isoWeek(Number(days)).year)
    }
    case 'julian': {
      return isDate ? whole(Number(days) + 2_440_588) : decimal(us + 2_440_588n * US_PER_DAY, 6 + 5, 0, US_PER_DAY)
    }
    case 'epoch': {
      return isDate ? whole(us / US_PER_SEC) : micro(us)
    }
    default: {
      throw new SqlError('22023', `unit "${unit}" not recognized for type ${isDate ? 'date' : typeLabel((v as PgTimestamp).zone)}`)
    }
  }
}

/** value / 10^digits (or / divisor) as decimal text with `scale` decimals (truncated, exact for the cases used). */
function decimal(value: bigint, digits: number, scale: number, divisor?: bigint): {scale: number; text: string} {
  const neg = value < 0n
  const a = neg ? -value : value
  const den = divisor ?? 10n ** BigInt(digits)
  const int = a / den
  let text = String(int)
  if (scale > 0) {
    const rem = ((a % den) * 10n ** BigInt(scale)) / den
    text += `.${String(rem).padStart(scale, '0')}`
  }
  return {scale, text: `${neg && a !== 0n ? '-' : ''}${text}`}
}

function isoWeek(days: number): {week: number; year: number} {
  const dow = ((days + 3) % 7 + 7) % 7 // Monday 0
  const thursday = days - dow + 3
  const {y} = civilFromDays(thursday)
  return {week: Math.floor((thursday - daysFromCivil(y, 1, 1)) / 7) + 1, year: y}
}

/** The current time in microseconds (millisecond precision from the clock). */
export function currentUs(): bigint {
  return nowUs()
}
