/** Edit distance between two strings (Levenshtein), for "did you mean" suggestions. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    prev = cur
  }
  return prev[b.length]
}

/** The candidate nearest to `input`, or undefined when none is reasonably close. */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const c of candidates) {
    const d = editDistance(input.toLowerCase(), c.toLowerCase())
    if (d < bestDistance) [best, bestDistance] = [c, d]
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.ceil(input.length / 3)) ? best : undefined
}
