/**
 * to_char(date | timestamp | timestamptz, format) as PostgreSQL 15 formats it (TimeZone UTC):
 * the common template patterns (years, months and days by number and by name, hours, minutes,
 * seconds and fractions, meridiem, quarter, weeks, day of year, Julian day, time zone), the FM
 * prefix (no padding), the TH/th suffix and quoted literal text.
 */
import * as D from './datetime.js'
import {SqlError} from './errors.js'

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']

/** Patterns, longest first so that `HH24` wins over `HH` and `YYYY` over `YY`. */
const PATTERNS = [
  'HH24', 'HH12', 'HH', 'MI', 'SSSSS', 'SSSS', 'SS', 'MS', 'US', 'FF1', 'FF2', 'FF3', 'FF4', 'FF5', 'FF6',
  'A.M.', 'a.m.', 'P.M.', 'p.m.', 'AM', 'am', 'PM', 'pm', 'Y,YYY', 'YYYY', 'yyyy', 'YYY', 'yyy', 'YY', 'yy', 'Y', 'y',
  'IYYY', 'IYY', 'IY', 'I', 'B.C.', 'b.c.', 'A.D.', 'a.d.', 'BC', 'bc', 'AD', 'ad',
  'MONTH', 'Month', 'month', 'MON', 'Mon', 'mon', 'MM', 'mm', 'DAY', 'Day', 'day', 'DY', 'Dy', 'dy', 'DDD', 'ddd', 'DD', 'dd', 'D', 'd',
  'IDDD', 'ID', 'IW', 'WW', 'W', 'CC', 'J', 'Q', 'TZH', 'TZM', 'TZ', 'tz', 'OF',
].sort((a, b) => b.length - a.length)

const CASELESS = ['HH24', 'HH12', 'HH', 'MI', 'SSSSS', 'SSSS', 'SS', 'MS', 'US', 'FF1', 'FF2', 'FF3', 'FF4', 'FF5', 'FF6', 'IYYY', 'IYY', 'IY', 'IDDD', 'ID', 'IW', 'WW', 'CC', 'Q', 'J', 'W', 'I'].sort((a, b) => b.length - a.length)

interface Parts {
  us: bigint
  days: number
  y: number
  m: number
  d: number
  zone: boolean
}

function ordinal(n: number, upper: boolean): string {
  const t = n % 100
  const s = t >= 11 && t <= 13 ? 'th' : n % 10 === 1 ? 'st' : n % 10 === 2 ? 'nd' : n % 10 === 3 ? 'rd' : 'th'
  return upper ? s.toUpperCase() : s
}

/** ISO 8601 week-numbering year and week of a day. */
function isoWeek(days: number): {week: number; year: number} {
  const dow = (((days + 3) % 7) + 7) % 7 // 0 = Monday (1970-01-01 was a Thursday)
  const thursday = days - dow + 3
  const {y} = D.civilFromDays(thursday)
  const jan1 = D.daysFromCivil(y, 1, 1)
  return {week: Math.floor((thursday - jan1) / 7) + 1, year: y}
}

export function toCharDatetime(v: D.PgDate | D.PgTimestamp, format: string): string {
  const t = v instanceof D.PgDate ? D.toTimestamp(v, true) : v
  const days = Number(t.us >= 0n ? t.us / D.US_PER_DAY : -((-t.us + D.US_PER_DAY - 1n) / D.US_PER_DAY))
  const p: Parts = {...D.civilFromDays(days), days, us: t.us - BigInt(days) * D.US_PER_DAY, zone: t.zone}
  let out = ''
  let i = 0
  while (i < format.length) {
    const c = format[i]
    if (c === '"') {
      let j = i + 1
      while (j < format.length && format[j] !== '"') {
        if (format[j] === '\\' && j + 1 < format.length) j++
        out += format[j]
        j++
      }
      i = j + 1
      continue
    }
    if (c === '\\' && i + 1 < format.length) {
      out += format[i + 1]
      i += 2
      continue
    }
    let fm = false
    let k = i
    if (format.startsWith('FM', k) || format.startsWith('fm', k)) {
      fm = true
      k += 2
    }
    // Numeric fields are matched in any case (`hh:mi:ss`); names, meridiem and era follow the pattern's case.
    const pat = PATTERNS.find((x) => format.startsWith(x, k)) ?? CASELESS.find((x) => format.slice(k, k + x.length).toUpperCase() === x)
    if (!pat) {
      out += c
      i++
      continue
    }
    k += pat.length
    let th: '' | 'TH' | 'th' = ''
    if (format.startsWith('TH', k) || format.startsWith('th', k)) {
      th = format.startsWith('TH', k) ? 'TH' : 'th'
      k += 2
    }
    const f = field(pat, p, fm)
    out += f.text + (th && f.n !== undefined ? ordinal(f.n, th === 'TH') : '')
    i = k
  }
  return out
}

function field(pat: string, p: Parts, fm: boolean): {n?: number; text: string} {
  const num = (n: number, width: number): {n: number; text: string} => ({n, text: fm ? String(n) : String(Math.abs(n)).padStart(width, '0').replace(/^/, n < 0 ? '-' : '')})
  const name = (s: string, width: number, style: string): {text: string} => {
    const styled = style === 'upper' ? s.toUpperCase() : style === 'lower' ? s.toLowerCase() : s
    return {text: fm ? styled : styled.padEnd(width, ' ')}
  }
  const style = (x: string): string => (x === x.toUpperCase() ? 'upper' : x === x.toLowerCase() ? 'lower' : 'cap')
  const sec = Number(p.us / 1_000_000n)
  const hour = Math.floor(sec / 3600)
  const frac = Number(p.us % 1_000_000n)
  const year = p.y <= 0 ? 1 - p.y : p.y
  const dow = (((p.days + 4) % 7) + 7) % 7 // 0 = Sunday
  const doy = p.days - D.daysFromCivil(p.y, 1, 1) + 1
  switch (pat) {
    case 'HH24': {
      return num(hour, 2)
    }
    case 'HH12':
    case 'HH': {
      return num(hour % 12 === 0 ? 12 : hour % 12, 2)
    }
    case 'MI': {
      return num(Math.floor(sec / 60) % 60, 2)
    }
    case 'SS': {
      return num(sec % 60, 2)
    }
    case 'SSSS':
    case 'SSSSS': {
      return num(sec, 1)
    }
    case 'MS': {
      return num(Math.floor(frac / 1000), 3)
    }
    case 'US': {
      return num(frac, 6)
    }
    case 'FF1':
    case 'FF2':
    case 'FF3':
    case 'FF4':
    case 'FF5':
    case 'FF6': {
      const w = Number(pat[2])
      return num(Math.floor(frac / 10 ** (6 - w)), w)
    }
    case 'AM':
    case 'PM': {
      return {text: hour < 12 ? 'AM' : 'PM'}
    }
    case 'am':
    case 'pm': {
      return {text: hour < 12 ? 'am' : 'pm'}
    }
    case 'A.M.':
    case 'P.M.': {
      return {text: hour < 12 ? 'A.M.' : 'P.M.'}
    }
    case 'a.m.':
    case 'p.m.': {
      return {text: hour < 12 ? 'a.m.' : 'p.m.'}
    }
    case 'Y,YYY': {
      return {text: `${Math.floor(year / 1000)},${String(year % 1000).padStart(3, '0')}`}
    }
    case 'YYYY':
    case 'yyyy': {
      return num(year, 4)
    }
    case 'YYY':
    case 'yyy': {
      return num(year % 1000, 3)
    }
    case 'YY':
    case 'yy': {
      return num(year % 100, 2)
    }
    case 'Y':
    case 'y': {
      return num(year % 10, 1)
    }
    case 'IYYY': {
      return num(isoWeek(p.days).year, 4)
    }
    case 'IYY': {
      return num(isoWeek(p.days).year % 1000, 3)
    }
    case 'IY': {
      return num(isoWeek(p.days).year % 100, 2)
    }
    case 'I': {
      return num(isoWeek(p.days).year % 10, 1)
    }
    case 'BC':
    case 'AD': {
      return {text: p.y <= 0 ? 'BC' : 'AD'}
    }
    case 'bc':
    case 'ad': {
      return {text: p.y <= 0 ? 'bc' : 'ad'}
    }
    case 'B.C.':
    case 'A.D.': {
      return {text: p.y <= 0 ? 'B.C.' : 'A.D.'}
    }
    case 'b.c.':
    case 'a.d.': {
      return {text: p.y <= 0 ? 'b.c.' : 'a.d.'}
    }
    case 'MONTH':
    case 'Month':
    case 'month': {
      return name(MONTHS[p.m - 1], 9, style(pat))
    }
    case 'MON':
    case 'Mon':
    case 'mon': {
      return name(MONTHS[p.m - 1].slice(0, 3), 3, style(pat))
    }
    case 'MM':
    case 'mm': {
      return num(p.m, 2)
    }
    case 'DAY':
    case 'Day':
    case 'day': {
      return name(DAYS[dow], 9, style(pat))
    }
    case 'DY':
    case 'Dy':
    case 'dy': {
      return name(DAYS[dow].slice(0, 3), 3, style(pat))
    }
    case 'DDD':
    case 'ddd': {
      return num(doy, 3)
    }
    case 'DD':
    case 'dd': {
      return num(p.d, 2)
    }
    case 'D':
    case 'd': {
      return num(dow + 1, 1)
    }
    case 'IDDD': {
      const iw = isoWeek(p.days)
      return num((iw.week - 1) * 7 + (dow === 0 ? 7 : dow), 3)
    }
    case 'ID': {
      return num(dow === 0 ? 7 : dow, 1)
    }
    case 'IW': {
      return num(isoWeek(p.days).week, 2)
    }
    case 'WW': {
      return num(Math.floor((doy - 1) / 7) + 1, 2)
    }
    case 'W': {
      return num(Math.floor((p.d - 1) / 7) + 1, 1)
    }
    case 'CC': {
      const cc = p.y > 0 ? Math.floor((p.y + 99) / 100) : -Math.floor((99 - p.y) / 100)
      return num(cc, 2)
    }
    case 'J': {
      return num(p.days + 2_440_588, 1)
    }
    case 'Q': {
      return num(Math.floor((p.m - 1) / 3) + 1, 1)
    }
    case 'TZ': {
      return {text: p.zone ? 'UTC' : ''}
    }
    case 'tz': {
      return {text: p.zone ? 'utc' : ''}
    }
    case 'TZH': {
      return {text: p.zone ? '+00' : ''}
    }
    case 'TZM': {
      return {text: p.zone ? '00' : ''}
    }
    case 'OF': {
      return {text: p.zone ? '+00' : ''}
    }
    default: {
      throw new SqlError('22007', `invalid datetime format pattern "${pat}"`)
    }
  }
}
