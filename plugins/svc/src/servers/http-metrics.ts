/**
 * REST request counts and latency, recorded per request with two Map lookups and a few additions,
 * handed to Prometheus only when it scrapes. prom-client's labelled Counter and Histogram build a
 * hash string of the labels, validate them and look up a bucket by number-as-string key on every
 * call: about a quarter of the CPU of a GET by id (issue 13, docs/benchmarks.md). The text a
 * scrape returns is the one prom-client gave: the counter is prom-client's own (fed at scrape
 * time), the histogram gives prom-client's registry the values its Histogram would.
 */
import {Counter, type Metric, type Registry} from 'prom-client'

interface Labels {
  method: string
  route: string
}

/** One method and route: its latency buckets, and its counts by status. */
interface RouteStats {
  /** Observations per bucket, not cumulative; one past every bound counts only in `count`. */
  readonly buckets: Float64Array
  count: number
  readonly labels: Labels
  readonly statuses: Map<number, StatusCount>
  sum: number
}

/** One line of a scrape, as prom-client's registry takes it (its types for this are not exported). */
interface Value {
  exemplar?: null | undefined
  labels: Record<string, number | string>
  metricName: string
  sharedLabels?: Labels
  value: number
}

interface Scrape {
  aggregator: 'sum'
  help: string
  name: string
  type: 'histogram'
  values: Value[]
}

interface StatusCount {
  readonly labels: Labels & {status: string}
  /** Requests not yet added to the prom-client counter. */
  pending: number
}

export interface HttpMetricsOptions {
  buckets: readonly number[]
  counterHelp: string
  counterName: string
  histogramHelp: string
  histogramName: string
  registers: Registry[]
}

export class HttpMetrics {
  /** In the order first seen: prom-client lists label sets in the order they were first observed. */
  private readonly counts: StatusCount[] = []
  private readonly histogram: RouteHistogram
  private readonly routes = new Map<string, Map<string, RouteStats>>()
  private readonly stats: RouteStats[] = []

  constructor(private readonly options: HttpMetricsOptions) {
    const {counts} = this
    const counter = new Counter({
      collect() {
        for (const c of counts) {
          if (c.pending === 0) continue
          this.inc(c.labels, c.pending)
          c.pending = 0
        }
      },
      help: options.counterHelp,
      labelNames: ['method', 'route', 'status'],
      name: options.counterName,
      registers: options.registers,
    })
    // A reset forgets the counts not yet handed over too, as prom-client's own counter would have.
    const reset = counter.reset.bind(counter)
    counter.reset = () => {
      for (const c of counts) c.pending = 0
      reset()
    }
    this.histogram = new RouteHistogram(options.histogramName, options.histogramHelp, options.buckets, this.stats, () => this.routes.clear())
    // registerMetric takes prom-client's Metric class; the registry only calls get(), getForPromString() and reset().
    for (const r of options.registers) r.registerMetric(this.histogram as unknown as Metric)
  }

  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.routes.get(route)
    if (byMethod === undefined) this.routes.set(route, (byMethod = new Map()))
    let s = byMethod.get(method)
    if (s === undefined) {
      s = {buckets: new Float64Array(this.options.buckets.length), count: 0, labels: {method, route}, statuses: new Map(), sum: 0}
      byMethod.set(method, s)
      this.stats.push(s)
    }
    let c = s.statuses.get(status)
    if (c === undefined) {
      c = {labels: {method, route, status: String(status)}, pending: 0}
      s.statuses.set(status, c)
      this.counts.push(c)
    }
    c.pending++
    // prom-client's bucket: the first bound at or above the value.
    const bounds = this.options.buckets
    let i = 0
    while (i < bounds.length && seconds > bounds[i]) i++
    if (i < bounds.length) s.buckets[i]++
    s.sum += seconds
    s.count++
  }
}

/** What prom-client's Histogram returns for a scrape, built from RouteStats. */
class RouteHistogram {
  readonly aggregator = 'sum'
  readonly type = 'histogram'

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    private readonly stats: RouteStats[],
    private readonly forget: () => void,
  ) {}

  async get(): Promise<Scrape> {
    const data = await this.getForPromString()
    // As prom-client's get(): the route's labels joined into each value's own.
    return {...data, values: data.values.map(({labels, sharedLabels, ...rest}) => ({...rest, labels: {...labels, ...sharedLabels}}))}
  }

  async getForPromString(): Promise<Scrape> {
    const values: Value[] = []
    const bucketName = `${this.name}_bucket`
    for (const s of this.stats) {
      let acc = 0
      for (const [i, le] of this.bounds.entries()) {
        acc += s.buckets[i]
        values.push({exemplar: null, labels: {le}, metricName: bucketName, sharedLabels: s.labels, value: acc})
      }
      values.push(
        {exemplar: null, labels: {le: '+Inf'}, metricName: bucketName, sharedLabels: s.labels, value: s.count},
        {exemplar: undefined, labels: {}, metricName: `${this.name}_sum`, sharedLabels: s.labels, value: s.sum},
        {exemplar: undefined, labels: {}, metricName: `${this.name}_count`, sharedLabels: s.labels, value: s.count},
      )
    }
    return {aggregator: this.aggregator, help: this.help, name: this.name, type: this.type, values}
  }

  /** As prom-client's: every label set is forgotten until observed again. */
  reset(): void {
    this.stats.length = 0
    this.forget()
  }
}
