/** Starts the real engine in a temporary data directory with the Redis and PostgreSQL servers on free loopback ports. */
import {expect} from 'chai'
import pg from 'pg'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {nullLogger, openEngine} from '../../src/engine/index.js'
import type {Engine, RunningServer, ServerContext} from '../../src/engine/types.js'
import {startPgServer} from '../../src/servers/pg/index.js'
import {startRedisServer} from '../../src/servers/redis/index.js'

export interface Harness {
  /** How often the servers called each engine method (to prove access paths). */
  calls: Record<string, number>
  close(): Promise<void>
  dataDir: string
  engine: Engine
  open: {pg: number; redis: number}
  pg?: RunningServer
  redis?: RunningServer
}

export async function startHarness(opts: {auth?: 'md5' | 'scram-sha-256'; now?: () => number; pg?: boolean; redis?: boolean; redisLimits?: {maxBulk?: number; maxInline?: number}} = {}): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-proto-'))
  const engine = await openEngine(join(dataDir, 'data'), {checkpointDelayMs: 5, indexCheckIntervalMs: 0, logger: nullLogger, now: opts.now})
  const open = {pg: 0, redis: 0}
  const calls: Record<string, number> = {}
  const counted = new Proxy(engine, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver)
      if (typeof v !== 'function') return v
      return (...args: unknown[]) => {
        calls[String(prop)] = (calls[String(prop)] ?? 0) + 1
        return (v as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  const ctx: ServerContext = {
    engine: counted,
    logger: nullLogger,
    metrics: {
      connectionClosed: (p) => {
        if (p === 'pg' || p === 'redis') open[p]--
      },
      connectionOpened: (p) => {
        if (p === 'pg' || p === 'redis') open[p]++
      },
    },
  }
  const h: Harness = {
    async close() {
      await h.redis?.close()
      await h.pg?.close()
      await engine.close()
      rmSync(dataDir, {force: true, recursive: true})
    },
    calls,
    dataDir,
    engine,
    open,
  }
  if (opts.redis !== false) h.redis = await startRedisServer(ctx, {host: '127.0.0.1', limits: opts.redisLimits, port: 0})
  if (opts.pg !== false) h.pg = await startPgServer(ctx, {auth: opts.auth, host: '127.0.0.1', password: 'svc-secret', port: 0, username: 'svc'})
  return h
}

/** A node-postgres client connected to the harness's PostgreSQL server as its user. */
export async function pgClient(h: Harness): Promise<pg.Client> {
  const c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc-secret', port: h.pg!.port, user: 'svc'})
  await c.connect()
  return c
}

export interface PgError extends Error {
  code?: string
  /** The ErrorResponse's DETAIL field, as node-postgres passes it on. */
  detail?: string
}

/** The error a query fails with (node-postgres carries the SQLSTATE in `code`); fails the test if it succeeds. */
export async function sqlError(p: Promise<unknown>): Promise<PgError> {
  try {
    await p
  } catch (error) {
    return error as PgError
  }
  return expect.fail('expected the query to fail') as never
}
