#!/usr/bin/env node
// Lists the stretches of a V8 CPU profile (`node --cpu-prof`) in which the main thread ran without
// going idle for at least --min-ms (default 20): each one kept every other socket waiting. For each,
// its length and the functions that took most of it (self time, and the deepest svc frames by
// inclusive time), then a summary grouped by the frame that took most of each stretch.
// With --probe FILE (the stalls bench/loop-probe.mjs recorded in the same run, LOOP_PROBE_OUT of
// bench/svc-noisy-neighbour.mjs), the stretches are instead the probe's stalls of the noisy window
// whose main thread spent at least --min-ms on a CPU: the profile names what ran in each.
// Usage: node bench/cpuprofile-stalls.mjs FILE.cpuprofile [--min-ms 20] [--list] [--probe FILE]
import {readFileSync} from 'node:fs'

const file = process.argv[2]
const at = (name, def) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : def)
const MIN_MS = at('--min-ms', 20)
const prof = JSON.parse(readFileSync(file, 'utf8'))
const byId = new Map(prof.nodes.map((n) => [n.id, n]))
const parent = new Map()
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const label = (n) => {
  const f = n.callFrame
  const where = f.url ? `${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}` : ''
  return `${f.functionName || '(anonymous)'} ${where}`.trim()
}
const IDLE = new Set(['(idle)'])
const isOwn = (n) => /plugins\/svc\/dist|svc\/src/.test(n.callFrame.url)

/** Adds one sample to a stretch: its self time, and the inclusive time of svc's own frames on its stack (each once). */
function addSample(s, n, dt) {
  s.ms += dt
  const self = label(n)
  s.self.set(self, (s.self.get(self) ?? 0) + dt)
  const seen = new Set()
  for (let id = n.id; id !== undefined; id = parent.get(id)) {
    const f = byId.get(id)
    if (!isOwn(f)) continue
    const l = label(f)
    if (seen.has(l)) continue
    seen.add(l)
    s.incl.set(l, (s.incl.get(l) ?? 0) + dt)
  }
}

const stretches = []
const probeArg = process.argv.indexOf('--probe')
if (probeArg === -1) {
  // A stretch is a run of samples none of which is (idle).
  let cur
  let t = prof.startTime
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i]
    const n = byId.get(prof.samples[i])
    if (IDLE.has(n.callFrame.functionName)) {
      if (cur) stretches.push(cur)
      cur = undefined
      continue
    }
    cur ??= {incl: new Map(), ms: 0, self: new Map(), start: t - prof.startTime}
    addSample(cur, n, (prof.timeDeltas[i + 1] ?? 0) / 1000)
  }
  if (cur) stretches.push(cur)
} else {
  // The probe's stalls of the noisy window with enough CPU: the samples inside each stall's span.
  const probe = JSON.parse(readFileSync(process.argv[probeArg + 1], 'utf8'))
  const [from, to] = probe.window
  for (const x of probe.stalls.filter((st) => st.at >= from && st.at < to && st.cpu >= MIN_MS)) {
    const s = {incl: new Map(), ms: 0, self: new Map(), start: x.mono - prof.startTime, wall: x.ms}
    let t = prof.startTime
    for (let i = 0; i < prof.samples.length; i++) {
      t += prof.timeDeltas[i]
      if (t >= x.mono && t <= x.mono + x.ms * 1000) addSample(s, byId.get(prof.samples[i]), (prof.timeDeltas[i + 1] ?? 0) / 1000)
    }
    // Weighed by the stall's CPU time, which the load does not stretch.
    s.sampled = s.ms
    s.ms = x.cpu
    stretches.push(s)
  }
}

const top = (m, k) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([l, ms]) => `${ms.toFixed(0)} ${l}`)
const long = stretches.filter((s) => s.ms >= MIN_MS)
const total = prof.endTime - prof.startTime
console.log(`${file}: ${(total / 1e6).toFixed(1)} s profiled, ${long.length} stretches >= ${MIN_MS} ms, sum ${long.reduce((a, s) => a + s.ms, 0).toFixed(0)} ms, max ${Math.max(0, ...long.map((s) => s.ms)).toFixed(0)} ms`)
const groups = new Map()
for (const s of long) {
  // The deepest own frame that still covers most of the stretch names it; else the top self entry.
  const cover = [...s.incl].filter(([, ms]) => ms >= (s.sampled ?? s.ms) * 0.5).sort((a, b) => a[1] - b[1])[0]
  const key = cover ? cover[0] : `(self) ${top(s.self, 1)[0]?.replace(/^\d+ /, '')}`
  const g = groups.get(key) ?? {n: 0, max: 0, sum: 0}
  g.n++
  g.sum += s.ms
  g.max = Math.max(g.max, s.ms)
  groups.set(key, g)
  if (process.argv.includes('--list')) {
    console.log(`\n+${(s.start / 1e6).toFixed(2)} s  ${s.ms.toFixed(0)} ms${s.wall === undefined ? '' : ` on CPU of ${s.wall.toFixed(0)} ms`}  [${key}]`)
    console.log(`  self: ${top(s.self, 5).join(' | ')}`)
    console.log(`  svc:  ${top(s.incl, 6).join(' | ')}`)
  }
}
console.log('\nby the deepest svc frame covering half a stretch or more (count, sum, max ms):')
for (const [k, g] of [...groups].sort((a, b) => b[1].sum - a[1].sum)) console.log(`${String(g.n).padStart(4)} ${g.sum.toFixed(0).padStart(7)} ${g.max.toFixed(0).padStart(6)}  ${k}`)
