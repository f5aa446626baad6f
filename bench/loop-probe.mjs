// Event-loop probe for a benchmarked server, loaded with `node --import` (bench/svc-noisy-neighbour.mjs
// does so when LOOP_PROBE names an output file). It records, independent of how busy the machine is:
// - every stall of the loop of 10 ms or more (a 2 ms interval timer that fired late), with its
//   wall-clock start, so a bench can keep only those inside its own window, and how much of it the
//   main thread spent on a CPU and how much waiting for one (Linux /proc/thread-self/schedstat):
//   the CPU part is the server's own work, the wait part is the machine's load;
// - every garbage collection of 5 ms or more (kind and duration);
// - a monitorEventLoopDelay histogram over the whole run.
// On exit it writes them as JSON to the file LOOP_PROBE names. Machine load lengthens a stall only
// when the server's own thread is descheduled; a stall is still one turn that did not poll sockets.
import {openSync, readSync, writeFileSync} from 'node:fs'
import {constants, monitorEventLoopDelay, performance, PerformanceObserver} from 'node:perf_hooks'

const out = process.env.LOOP_PROBE
if (out) {
  const TICK = 2
  const stalls = []
  const gcs = []
  const hist = monitorEventLoopDelay({resolution: 10})
  hist.enable()
  // Read on the main thread, so thread-self is the event loop's thread: on-CPU and run-queue ns.
  let fd
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r')
  } catch {
    // not Linux: stalls are still measured, without their CPU and wait split
  }
  const buf = Buffer.alloc(128)
  const sched = () => {
    if (fd === undefined) return [0, 0]
    const n = readSync(fd, buf, 0, 128, 0)
    const [cpu, wait] = buf.toString('latin1', 0, n).split(' ')
    return [Number(cpu) / 1e6, Number(wait) / 1e6]
  }
  let last = performance.now()
  let [lastCpu, lastWait] = sched()
  const round = (x) => Math.round(x * 10) / 10
  const timer = setInterval(() => {
    const now = performance.now()
    const [cpu, wait] = sched()
    const late = now - last - TICK
    // mono: the stall's start on the monotonic clock in microseconds, the clock of a --cpu-prof profile's timestamps.
    if (late >= 10) stalls.push({at: Math.round(performance.timeOrigin + last), cpu: round(cpu - lastCpu), mono: Math.round(Number(process.hrtime.bigint() / 1000n) - (now - last) * 1000), ms: round(late), wait: round(wait - lastWait)})
    last = now
    lastCpu = cpu
    lastWait = wait
  }, TICK)
  timer.unref()
  const kinds = {[constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb'}
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.duration >= 5) gcs.push({at: Math.round(performance.timeOrigin + e.startTime), kind: kinds[e.detail?.kind] ?? String(e.detail?.kind), ms: Math.round(e.duration * 10) / 10})
    }
  })
  obs.observe({entryTypes: ['gc']})
  process.on('exit', () => {
    hist.disable()
    const ms = (ns) => Math.round(ns / 1e4) / 100
    writeFileSync(out, JSON.stringify({
      delay: {max: ms(hist.max), mean: ms(hist.mean), p50: ms(hist.percentile(50)), p99: ms(hist.percentile(99)), p999: ms(hist.percentile(99.9))},
      gcs,
      stalls,
    }))
  })
}
