// Builds svc data directories for the benchmarks straight with `git fast-import`, in the exact
// layout and file format the engine writes, so large histories take seconds instead of minutes.
import {spawn, spawnSync} from 'node:child_process'
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {IDS_JS} from './svc-common.mjs'

const {docPath, parseId} = await import(IDS_JS)

const SYL = ['ka', 'lo', 'mi', 'ne', 'su', 'ta', 'ri', 'po', 'da', 've', 'zu', 'xo', 'bi', 'ge', 'fu', 'ho', 'ja', 'wy']
/** A deterministic vocabulary of ~5,800 pseudo-words of 2-3 syllables. */
export const WORDS = []
for (const a of SYL) for (const b of SYL) {
  WORDS.push(a + b)
  for (const c of SYL) WORDS.push(a + b + c)
}

let seed = 42
export function rand() {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}
// Zipf-like word choice: real text repeats common words, which is what makes search hard.
export const word = () => WORDS[Math.floor(WORDS.length * rand() ** 3)]
const words = (n) => Array.from({length: n}, word).join(' ')

/** A document of about 200 bytes of JSON. */
export function makeDoc(i, version = 0) {
  return {id: `items:${i}`, n: i, rev: version, title: words(3), body: words(18)}
}

/**
 * Creates `<dir>/repo` with `docs` documents and `commits` commits in total (the commits after
 * the first `docs` rewrite random documents), every commit one document, like the engine.
 */
export async function buildDataDir(dir, {commits, docs}) {
  mkdirSync(dir, {recursive: true})
  const repo = join(dir, 'repo')
  spawnSync('git', ['init', '--bare', '-q', repo])
  spawnSync('git', ['-C', repo, 'symbolic-ref', 'HEAD', 'refs/heads/main'])
  const child = spawn('git', ['-C', repo, 'fast-import', '--quiet', '--done'], {stdio: ['pipe', 'ignore', 'inherit']})
  const done = new Promise((r) => child.on('exit', r))
  const t = Math.floor(Date.now() / 1000) - commits
  for (let c = 0; c < commits; c++) {
    const i = c < docs ? c : Math.floor(rand() * docs)
    const doc = makeDoc(i, c)
    const body = Buffer.from(`${JSON.stringify(doc, null, 2)}\n`)
    const msg = `put ${doc.id}\n\nSvc-Op: put\nSvc-Id: ${doc.id}\nSvc-Seq: ${c + 1}\nSvc-Time: ${new Date((t + c) * 1000).toISOString()}\n`
    const head = `commit refs/heads/main\ncommitter svc <svc@localhost> ${t + c} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}M 100644 inline ${docPath(parseId(doc.id))}\ndata ${body.length}\n`
    if (!child.stdin.write(Buffer.concat([Buffer.from(head), body, Buffer.from('\n\n')]))) await new Promise((r) => child.stdin.once('drain', r))
  }
  child.stdin.end('done\n')
  await done
  spawnSync('git', ['-C', repo, 'repack', '-a', '-d', '-q'])
  return dir
}
