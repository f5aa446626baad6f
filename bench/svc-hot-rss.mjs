#!/usr/bin/env node
// Memory of a server whose every document was read through the Redis protocol (issue 26: a hot
// id's parsed document is kept on its document-map entry, engine/hot-docs.ts, bounded). One data
// directory of N documents (built with git fast-import, bench/svc-fixture.mjs) is copied for two
// builds; each build's server reads every key twice with pipelined GETs, and its RSS is printed
// after start, after the first pass and after the second, with the CPU per GET of each pass.
// Usage: node bench/svc-hot-rss.mjs [--docs 100000] [--ab /work/main]
// Needs the built CLIs (this one and --ab's).
import {spawnSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {connect} from 'node:net'
import {join} from 'node:path'

import {arg, cpuSeconds, RUN_JS, startServer, tempDir} from './svc-common.mjs'
import {buildDataDir} from './svc-fixture.mjs'

const DOCS = arg('docs', 100_000)
const ai = process.argv.indexOf('--ab')
const AB = ai === -1 ? '/work/main' : process.argv[ai + 1]
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024

/** GETs of every key, 1,000 per write, on one connection; resolves with the count of non-null replies. */
function readAll(port) {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1')
    let next = 0
    let replies = 0
    let found = 0
    let buf = ''
    const send = () => {
      const parts = []
      for (let k = 0; k < 1000 && next < DOCS; k++, next++) {
        const key = `items:${next}`
        parts.push(`*2\r\n$3\r\nGET\r\n$${key.length}\r\n${key}\r\n`)
      }
      s.write(parts.join(''))
    }
    s.on('data', (d) => {
      buf += d.toString('latin1')
      // Count whole replies: a bulk header and its body, or a null.
      for (;;) {
        if (buf.startsWith('$-1\r\n')) {
          buf = buf.slice(5)
          replies++
          continue
        }
        const m = /^\$(\d+)\r\n/.exec(buf)
        if (!m || buf.length < m[0].length + Number(m[1]) + 2) break
        buf = buf.slice(m[0].length + Number(m[1]) + 2)
        replies++
        found++
      }
      if (replies === next) {
        if (next === DOCS) {
          s.end()
          resolve(found)
        } else send()
      }
    })
    s.on('error', reject)
    s.on('connect', send)
  })
}

const fixture = await buildDataDir(join(tempDir(), 'fixture'), {commits: DOCS, docs: DOCS})
for (const [name, runJs] of [['a', join(AB, 'bin', 'run.js')], ['b', RUN_JS]]) {
  const dir = join(tempDir(), name)
  spawnSync('cp', ['-r', fixture, dir])
  const server = await startServer(dir, [], 'redis', runJs)
  const pid = server.child.pid
  await new Promise((r) => setTimeout(r, 3000))
  const start = rssMb(pid)
  const passes = []
  for (let pass = 0; pass < 2; pass++) {
    const c0 = cpuSeconds(pid)
    const found = await readAll(server.port)
    passes.push({cpuUsPerGet: (((cpuSeconds(pid) - c0) * 1e6) / DOCS).toFixed(2), found, rssMb: rssMb(pid).toFixed(0)})
  }
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0]
  console.log(JSON.stringify({build: name === 'a' ? AB : 'this', docs: DOCS, load, passes, rssAfterStartMb: start.toFixed(0)}))
  await server.stop()
}
