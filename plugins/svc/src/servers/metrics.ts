import {collectDefaultMetrics, Gauge, Registry} from 'prom-client'

import type {Engine} from '../engine/types.js'
import type {FullTextIndex} from '../engine/fulltext.js'
import type {ServerContext} from '../engine/types.js'

import {HttpMetrics} from './http-metrics.js'

export type Protocol = 'pg' | 'redis' | 'rest'

export interface ServerMetrics {
  connections: ServerContext['metrics']
  httpRequest(method: string, route: string, status: number, seconds: number): void
  registry: Registry
}

/**
 * The process's Prometheus registry. Engine figures are read at scrape time (collect), so the
 * write and read paths pay nothing for them. The spec's `svc.index.*` progress metrics are
 * exported as `svc_index_*` (Prometheus names cannot contain dots).
 */
export function createMetrics(engine: Engine): ServerMetrics {
  const registry = new Registry()
  collectDefaultMetrics({prefix: 'svc_process_', register: registry})
  const registers = [registry]
  const d = () => engine.details()
  const progress = (): FullTextIndex['progress'] | undefined => engine.indexProgress()

  new Gauge({collect() { this.set(d().pendingEntries) }, help: 'Acknowledged writes not yet committed to Git', name: 'svc_wal_pending_entries', registers})
  new Gauge({collect() { this.set(d().maxPendingEntries) }, help: 'Back-pressure bound on pending entries', name: 'svc_wal_max_pending_entries', registers})
  new Gauge({collect() { this.set(d().walBytes) }, help: 'Bytes in write-ahead log segments', name: 'svc_wal_bytes', registers})
  new Gauge({collect() { this.set(d().walFsyncs) }, help: 'durable (O_DSYNC) writes of the write-ahead log (group commit: many writes each)', name: 'svc_wal_fsyncs', registers})
  new Gauge({collect() { this.set(d().seq) }, help: 'Last write-ahead log sequence number', name: 'svc_wal_sequence', registers})
  new Gauge({
    collect() {
      this.reset()
      for (const b of d().branches) this.set({branch: b.name}, b.documents)
    },
    help: 'Current documents per branch',
    labelNames: ['branch'],
    name: 'svc_documents',
    registers,
  })
  new Gauge({
    collect() {
      this.reset()
      for (const b of d().branches) this.set({branch: b.name}, b.index.documents)
    },
    help: 'Documents in the full-text index per branch (should equal svc_documents)',
    labelNames: ['branch'],
    name: 'svc_index_documents',
    registers,
  })
  new Gauge({
    collect() {
      this.reset()
      for (const b of d().branches) this.set({branch: b.name}, b.index.pending)
    },
    help: 'Documents waiting in the running reindex batch per branch',
    labelNames: ['branch'],
    name: 'svc_index_reindex_pending',
    registers,
  })
  new Gauge({collect() { this.set(progress()?.documentsIndexed ?? 0) }, help: 'Documents indexed by background reindexing since start', name: 'svc_index_reindexed_documents', registers})
  new Gauge({collect() { this.set(progress()?.runs ?? 0) }, help: 'Completed reindex runs since start', name: 'svc_index_reindex_runs', registers})
  new Gauge({collect() { this.set(progress()?.lastRunSeconds ?? 0) }, help: 'Duration of the last reindex run', name: 'svc_index_reindex_last_duration_seconds', registers})
  new Gauge({collect() { this.set(progress()?.documentErrors ?? 0) }, help: 'Documents that could not be indexed since start', name: 'svc_index_document_errors', registers})
  new Gauge({collect() { this.set(progress()?.corruptDetected ?? 0) }, help: 'Corrupt index files detected (and rebuilt) since start', name: 'svc_index_corrupt_detected', registers})

  const active = new Gauge({help: 'Open client connections per protocol', labelNames: ['protocol'], name: 'svc_active_connections', registers})
  for (const p of ['pg', 'redis', 'rest']) active.set({protocol: p}, 0)
  const http = new HttpMetrics({
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    counterHelp: 'HTTP requests by method, route and status',
    counterName: 'svc_http_requests_total',
    histogramHelp: 'HTTP request latency by method and route',
    histogramName: 'svc_http_request_duration_seconds',
    registers,
  })
  return {
    connections: {
      connectionClosed: (p) => active.dec({protocol: p}),
      connectionOpened: (p) => active.inc({protocol: p}),
    },
    httpRequest: (method, route, status, seconds) => http.record(method, route, status, seconds),
    registry,
  }
}
