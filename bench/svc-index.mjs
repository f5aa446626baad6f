// Point queries on a non-id field through svc's PostgreSQL protocol, without and with a secondary
// index (CREATE INDEX), over the same rows in the same run: node bench/svc-index.mjs [--rows 20000]
import pg from 'pg'

import {arg, startServer, tempDir} from './svc-common.mjs'

const ROWS = arg('rows', 20_000)
const CLIENTS = 4

async function measure(clients, queries, label) {
  let next = 0
  const started = process.hrtime.bigint()
  await Promise.all(clients.map(async (c) => {
    while (next < queries) {
      const i = next++
      const k = (i * 7919) % ROWS
      const r = await c.query('SELECT id, n FROM t WHERE code = $1', [`c${k}`])
      if (r.rowCount !== 1) throw new Error(`${label}: expected one row for c${k}, got ${r.rowCount}`)
    }
  }))
  const secs = Number(process.hrtime.bigint() - started) / 1e9
  return queries / secs
}

const server = await startServer(tempDir(), [], 'pg')
const clients = []
try {
  for (let i = 0; i < CLIENTS; i++) {
    const c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: server.port, user: 'svc'})
    await c.connect()
    clients.push(c)
  }
  const c = clients[0]
  await c.query('CREATE TABLE t (id int, code text, n int)')
  for (let i = 0; i < ROWS; i += 1000) {
    const values = Array.from({length: Math.min(1000, ROWS - i)}, (_, j) => `(${i + j}, 'c${i + j}', ${(i + j) % 97})`).join(', ')
    await c.query(`INSERT INTO t (id, code, n) VALUES ${values}`)
  }
  await measure(clients, 20, 'warm-up')
  const scan = await measure(clients, 100, 'table scan')
  const t0 = Date.now()
  await c.query('CREATE INDEX t_code ON t (code)')
  const buildMs = Date.now() - t0
  await measure(clients, 200, 'warm-up')
  const indexed = await measure(clients, 20_000, 'index')
  console.log(`rows: ${ROWS}, ${CLIENTS} clients, extended protocol`)
  console.log(`WHERE code = $1 without index (table scan): ${scan.toFixed(1)} queries/s`)
  console.log(`WHERE code = $1 with CREATE INDEX:          ${indexed.toFixed(0)} queries/s (index built in ${buildMs} ms)`)
  console.log(`ratio indexed / unindexed: ${(indexed / scan).toFixed(0)}x`)
} finally {
  for (const c of clients) await c.end().catch(() => {})
  await server.stop()
}
