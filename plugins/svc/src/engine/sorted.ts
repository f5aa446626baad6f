/** Index of the first element of the sorted array `a` that is not below `x` (binary search). */
export function lowerBound<T extends number | string>(a: ArrayLike<T>, x: T): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid] < x) lo = mid + 1
    else hi = mid
  }
  return lo
}
