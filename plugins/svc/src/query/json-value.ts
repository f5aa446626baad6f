/**
 * `JSON.stringify` replacer for query results: 64-bit integers (bigint) go out as numbers when a
 * double holds them exactly and as decimal text otherwise, so no digit is lost.
 */
export function jsonValue(_key: string, value: unknown): unknown {
  if (typeof value !== 'bigint') return value
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString()
}
