import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {readFileSync, writeFileSync} from 'node:fs'
import {getPriority} from 'node:os'
import {join} from 'node:path'

import {BACKGROUND_NICE, git, gitStream} from '../src/engine/git.js'
import {useGitSpawner} from '../src/engine/git-spawner.js'
import {openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

// Background git (history log, commit-graph, automatic repacks) yields the cores to the server;
// a git a request waits on does not. `nice` with no arguments prints the niceness it inherited:
// run as a git alias, it reports the git process's own.
const NICE = ['-c', 'alias.niceness=!nice', 'niceness']

async function streamed(repo: string, background: boolean): Promise<number> {
  let out = ''
  await gitStream(repo, NICE, (d) => (out += d.toString()), undefined, 'git niceness', {background})
  return Number(out.trim())
}

describe('svc background git runs at a lower priority than the server (git.ts)', () => {
  let repo: string
  const base = getPriority()
  before(() => {
    repo = tempDir()
    execFileSync('git', ['init', '-q', repo])
  })
  after(() => cleanupTempDirs())

  for (const helper of [false, true]) {
    it(`${helper ? 'through the git helper process' : 'started by the server itself'}: background at nice ${BACKGROUND_NICE}, the rest at the server's`, async () => {
      const release = helper ? useGitSpawner() : undefined
      try {
        const expected = Math.min(19, base + BACKGROUND_NICE)
        expect(await streamed(repo, true)).to.equal(expected)
        expect(await streamed(repo, false)).to.equal(base)
        expect(Number((await git(repo, NICE, {background: true})).stdout.trim())).to.equal(expected)
        expect(Number((await git(repo, NICE)).stdout.trim())).to.equal(base)
      } finally {
        release?.()
      }
    })
  }
  it('a compaction on an open engine repacks at the background priority, so requests keep the cores', async () => {
    // A `git` first on PATH that notes each repack's niceness, then runs the real git.
    const bin = tempDir()
    const calls = join(bin, 'calls')
    const real = execFileSync('sh', ['-c', 'command -v git']).toString().trim()
    writeFileSync(join(bin, 'git'), `#!/bin/sh\ncase " $* " in *" repack "*) echo "$(nice) $*" >> '${calls}' ;; esac\nexec '${real}' "$@"\n`, {mode: 0o755})
    const path = process.env.PATH
    process.env.PATH = `${bin}:${path}`
    try {
      const db = await openEngine(tempDir(), {fullText: false})
      try {
        await db.put({id: 'a:1', n: 1})
        await db.compact()
      } finally {
        await db.close()
      }
    } finally {
      process.env.PATH = path
    }
    const compactions = readFileSync(calls, 'utf8').trim().split('\n').filter((l) => l.includes(' -a -d -f '))
    expect(compactions).to.have.length(1)
    expect(Number(compactions[0].split(' ')[0])).to.equal(Math.min(19, base + BACKGROUND_NICE))
  })
})
