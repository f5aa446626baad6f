/** Probes, health records and Prometheus metrics. */
import type {RestContext, RestReply, Route} from './router.js'

export function systemRoutes({health, metrics}: RestContext, draining: () => boolean): Route[] {
  const text = 'text/plain; charset=utf-8'
  // A liveness probe: fails while the server drains and while writes cannot be made (the git writer is down).
  const healthz = (): RestReply => {
    if (draining()) return {body: 'draining\n', status: 503, type: text}
    const live = health.liveness()
    return live.ok ? {body: 'ok\n', type: text} : {body: `${live.reason}\n`, status: 503, type: text}
  }
  const checks = async (): Promise<RestReply> => {
    const h = await health.checks()
    return {json: h, status: h.status === 'healthy' ? 200 : 503}
  }
  const record = async (): Promise<RestReply> => {
    const rec = await health.record()
    return {json: rec, status: rec.status === 'ok' ? 200 : 503}
  }
  return [
    {handler: healthz, methods: ['GET'], path: '/healthz', whileDraining: true},
    {handler: checks, methods: ['GET'], path: '/health', whileDraining: true},
    {handler: async () => ({body: await metrics.registry.metrics(), type: metrics.registry.contentType}), methods: ['GET'], path: '/metrics', whileDraining: true},
    {handler: record, methods: ['GET'], path: '/api/v1/health'},
  ]
}
