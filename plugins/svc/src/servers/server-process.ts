import {openEngine} from '../engine/index.js'
import {createLogger} from '../engine/logger.js'
import type {RunningServer, ServerContext} from '../engine/types.js'
import type {ServerConfig} from './config-edn.js'
import {Health} from './health.js'
import {createMetrics} from './metrics.js'
import {checkFollowTarget, startFollower, stopFollower} from '../ops/follower.js'
import {applyConfigRemotes} from '../ops/remotes.js'
import {startReplicator, stopReplicator} from '../ops/replicator.js'
import {startScheduler, stopScheduler} from '../ops/scheduler.js'
import {publishServerLink, withdrawServerLink} from '../ops/server-link.js'

export interface ReadyInfo {
  dataDir: string
  documents: number
  pg?: number
  redis?: number
  rest?: number
  status: 'listening'
}

export interface RunHooks {
  /** Called once every enabled protocol listens. */
  onReady(info: ReadyInfo): void
  /** Resolves the process's stop request; defaults to SIGTERM/SIGINT. */
  stopSignal?: Promise<string>
  version: string
}

function signalPromise(): Promise<string> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals): void => {
      process.off('SIGTERM', on)
      process.off('SIGINT', on)
      resolve(sig)
    }
    process.on('SIGTERM', on)
    process.on('SIGINT', on)
  })
}

/**
 * The svc server process: opens the engine, starts REST, Redis and PostgreSQL adapters (each
 * unless disabled), and on SIGTERM/SIGINT stops accepting, lets in-flight requests finish,
 * flushes every acknowledged write to Git and returns (the command then exits 0).
 */
export async function runServer(cfg: ServerConfig, hooks: RunHooks): Promise<void> {
  const logger = createLogger({format: cfg.logFormat, level: cfg.logLevel})
  const stop = hooks.stopSignal ?? signalPromise()
  const startedAt = Date.now()
  const engine = await openEngine(cfg.dataDir, {
    cacheBytes: cfg.memoryLimitMb ? Math.min(cfg.cache.maxBytes, Math.floor((cfg.memoryLimitMb * 1024 * 1024) / 8)) : cfg.cache.maxBytes,
    checkpointMaxDelayMs: cfg.wal.checkpointMaxDelayMs,
    committerEmail: cfg.committerEmail,
    committerName: cfg.committerName,
    fullText: cfg.index.enabled,
    indexBatchSize: cfg.index.batchSize,
    indexCheckIntervalMs: cfg.index.checkIntervalMinutes * 60_000,
    indexDir: cfg.index.dir,
    indexSaveIntervalMs: cfg.index.saveIntervalMinutes * 60_000,
    logger,
    maxPendingEntries: cfg.wal.maxPendingEntries,
  })
  try {
    await applyConfigRemotes(cfg.dataDir, cfg.remotes)
    // A follower is read-only before any protocol listens.
    if (cfg.follow !== undefined) {
      await checkFollowTarget(cfg.dataDir, cfg.follow)
      startFollower(engine, cfg.follow, logger)
    }
  } catch (error) {
    await engine.close()
    throw error
  }
  const metrics = createMetrics(engine)
  const health = new Health(engine, {memoryLimitMb: cfg.memoryLimitMb, startedAt, version: hooks.version})
  const ctx: ServerContext = {engine, logger, metrics: metrics.connections}
  const servers: Array<{name: string; server: RunningServer}> = []
  const info: ReadyInfo = {dataDir: cfg.dataDir, documents: engine.stats().documents, status: 'listening'}
  try {
    if (cfg.rest.enabled) {
      const {startRestServer} = await import('./rest/index.js')
      const ui = cfg.rest.ui ? {readOnly: cfg.follow !== undefined} : undefined
      const s = await startRestServer(ctx, {health, host: cfg.rest.host, maxBodyBytes: cfg.rest.maxBodyBytes, metrics, net: cfg.rest.net, port: cfg.rest.port, ui})
      servers.push({name: 'REST', server: s})
      info.rest = s.port
    }
    if (cfg.redis.enabled) {
      const {startRedisServer} = await import('./redis/index.js')
      const s = await startRedisServer(ctx, {host: cfg.redis.host, maxReplyBytes: cfg.redis.maxReplyBytes, net: cfg.redis.net, port: cfg.redis.port})
      servers.push({name: 'Redis', server: s})
      info.redis = s.port
    }
    if (cfg.postgresql.enabled) {
      const {startPgServer} = await import('./pg/index.js')
      const {host, maxInValues, maxStatementBytes, net, parseTimeoutMs, password, port, username} = cfg.postgresql
      const s = await startPgServer(ctx, {host, maxInValues, maxStatementBytes, net, parseTimeoutMs, password, port, username})
      servers.push({name: 'PostgreSQL', server: s})
      info.pg = s.port
    }
  } catch (error) {
    await Promise.allSettled(servers.map((s) => s.server.close()))
    await stopFollower()
    await engine.close()
    throw error
  }
  publishServerLink({backupDir: cfg.backup.dir, dataDir: cfg.dataDir, rest: info.rest === undefined ? undefined : {host: cfg.rest.host, port: info.rest}})
  startScheduler(engine, logger)
  if (cfg.follow === undefined) startReplicator(engine, logger)
  hooks.onReady(info)
  const sig = await stop
  logger.info('shutting down', {signal: sig})
  // A second signal while draining means "now": acknowledged writes are safe in the WAL anyway.
  const force = (): void => {
    logger.warn('second signal: exiting without flushing; the write-ahead log is replayed at the next start')
    process.exit(130)
  }
  process.once('SIGINT', force)
  process.once('SIGTERM', force)
  try {
    await Promise.allSettled(servers.map(async (s) => {
      await s.server.close()
      logger.info(`${s.name} server closed`)
    }))
    withdrawServerLink()
    await stopScheduler()
    await stopReplicator()
    await stopFollower()
    await engine.close()
    logger.info('stopped; every acknowledged write is in git')
  } finally {
    process.off('SIGINT', force)
    process.off('SIGTERM', force)
  }
}
