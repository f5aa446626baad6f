/**
 * Money in the input files is a decimal amount (12.5 or "12.50"); inside the workspace it is
 * integer cents, so sums are exact. Returns null for negatives, NaN or more than 2 decimals.
 */
export function toCents(value: number | string): null | number {
  const text = typeof value === 'number' ? String(value) : value.trim()
  const m = /^(\d+)(?:\.(\d{1,2}))?$/.exec(text)
  if (!m) {
    // 12.10 arrives from TOML as the number 12.1; floats with float noise still round to cents.
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) {
      const cents = Math.round(value * 100)
      return Math.abs(cents - value * 100) < 1e-6 ? cents : null
    }
    return null
  }
  return Number(m[1]) * 100 + Number((m[2] ?? '0').padEnd(2, '0'))
}

/** 1250 -> "12.50": the form both Google Ads CSV and Editor files take. */
export function fromCents(cents: number): string {
  const sign = cents < 0 ? '-' : ''
  const abs = Math.abs(cents)
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`
}
