/**
 * A throwaway PostgreSQL 15 cluster in a temporary directory on a free loopback port: the peer
 * the differential suite compares svc with. PostgreSQL refuses to run as root, so as root it runs
 * as the `postgres` system user (created by the Debian package).
 */
import {execFileSync, spawnSync} from 'node:child_process'
import {chmodSync, chownSync, existsSync, mkdtempSync, rmSync} from 'node:fs'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

export interface PeerPostgres {
  port: number
  stop(): void
}

const PGBIN = process.env.PGBIN ?? '/usr/lib/postgresql/15/bin'

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const {port} = srv.address() as {port: number}
      srv.close(() => resolve(port))
    })
  })
}

export async function startPostgres(): Promise<PeerPostgres> {
  if (!existsSync(join(PGBIN, 'initdb'))) {
    throw new Error(`PostgreSQL 15 server binaries not found in ${PGBIN}: run scripts/install-peers.sh (Debian package postgresql)`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'pg-peer-'))
  const port = await freePort()
  const asRoot = process.getuid?.() === 0
  chmodSync(dir, 0o777)
  if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), -1)
  const sh = (cmd: string): void => {
    const r = asRoot ? spawnSync('su', ['postgres', '-c', cmd], {encoding: 'utf8'}) : spawnSync('sh', ['-c', cmd], {encoding: 'utf8'})
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`)
  }
  // UTC and ISO dates, as svc prints them; fsync off: the cluster is thrown away after the run.
  sh(`${PGBIN}/initdb -D ${dir}/data -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null`)
  sh(`${PGBIN}/pg_ctl -D ${dir}/data -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c timezone=UTC -c fsync=off" -l ${dir}/log -w start >/dev/null`)
  return {
    port,
    stop() {
      try {
        sh(`${PGBIN}/pg_ctl -D ${dir}/data -m immediate -w stop >/dev/null`)
      } finally {
        rmSync(dir, {force: true, recursive: true})
      }
    },
  }
}
