import {expect} from 'chai'
import {Counter, Histogram, Registry} from 'prom-client'

import {HttpMetrics} from '../src/servers/http-metrics.js'

/**
 * REST request metrics are counted by svc and handed to Prometheus at scrape time: what a scrape
 * returns (text and JSON) must be what prom-client's own labelled Counter and Histogram gave.
 */
describe('svc HTTP request metrics', () => {
  const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
  const names = {
    counterHelp: 'HTTP requests by method, route and status',
    counterName: 'svc_http_requests_total',
    histogramHelp: 'HTTP request latency by method and route',
    histogramName: 'svc_http_request_duration_seconds',
  }

  const pair = () => {
    const ours = new Registry()
    const metrics = new HttpMetrics({buckets, ...names, registers: [ours]})
    const theirs = new Registry()
    const requests = new Counter({help: names.counterHelp, labelNames: ['method', 'route', 'status'], name: names.counterName, registers: [theirs]})
    const latency = new Histogram({buckets, help: names.histogramHelp, labelNames: ['method', 'route'], name: names.histogramName, registers: [theirs]})
    const record = (method: string, route: string, status: number, seconds: number): void => {
      metrics.record(method, route, status, seconds)
      requests.labels(method, route, String(status)).inc()
      latency.labels(method, route).observe(seconds)
    }
    return {ours, record, theirs}
  }

  it('scrapes as prom-client did, across scrapes, for every bucket and past the last', async () => {
    const {ours, record, theirs} = pair()
    expect(await ours.metrics()).to.equal(await theirs.metrics())
    const routes = ['/api/v1/documents/:id', '/api/v1/documents', 'unmatched', 'a "quoted" \\ route\nline']
    let n = 0
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 500; i++) {
        n++
        const seconds = [0, 0.0005, 0.0004999, 0.0007, 0.003, 0.01, 0.2, 0.5, 2.5, 2.6, 100, (n * 7919) % 3000 / 1000][n % 12]
        record(['GET', 'HEAD', 'PUT'][n % 3], routes[(n * 31) % (round + 2)], [200, 404, 500, 503][(n * 13) % 4], seconds)
      }
      expect(await ours.metrics()).to.equal(await theirs.metrics())
      expect(await ours.getMetricsAsJSON()).to.deep.equal(await theirs.getMetricsAsJSON())
    }
  })

  it('forgets label sets on a reset, as prom-client does', async () => {
    const {ours, record, theirs} = pair()
    record('GET', '/x', 200, 0.001)
    ours.resetMetrics()
    theirs.resetMetrics()
    expect(await ours.metrics()).to.equal(await theirs.metrics())
    record('GET', '/y', 404, 0.3)
    record('GET', '/x', 200, 0.002)
    expect(await ours.metrics()).to.equal(await theirs.metrics())
  })
})
