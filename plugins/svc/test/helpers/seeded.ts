/**
 * Seeded pickers for test data: `next(n)` gives an integer in [0, n), the same sequence on every
 * run. Two generators, because tests recorded their data with either (the same seed must keep
 * giving the same rows).
 */

/** The linear congruential generator in doubles modulo 2^31 (cycles early: past 2^53 the product loses low bits). */
export function seededDoubles(seed: number): (n: number) => number {
  let s = seed
  return (n) => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648
    return Math.floor((s / 2_147_483_648) * n)
  }
}

/** The same generator in exact 32-bit arithmetic. */
export function seeded32(seed: number): (n: number) => number {
  let s = seed
  return (n) => {
    s = (Math.imul(s, 1_103_515_245) + 12_345) >>> 0
    return Math.floor((s / 4_294_967_296) * n)
  }
}
