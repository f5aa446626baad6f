import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {PackReader} from '../src/engine/pack-writer/pack-reader.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

/**
 * The pack writer reads trees it did not write from git's own packs: every object of a pack
 * git made (deltas by offset and by id) reads as `git cat-file` gives it, an id the repository
 * lacks reads as nothing even when it shares its first bytes with one it has, packs added and
 * removed under the reader are followed, and a damaged pack is an error naming the pack.
 */

/** A repository of `commits` commits, each rewriting one of 40 files under a few directories (trees that delta well). */
function repoWith(commits: number, from = 0, repo = join(tempDir(), 'repo')): string {
  if (!existsSync(repo)) {
    execFileSync('git', ['init', '--bare', '-q', repo])
    gitOut(repo, ['symbolic-ref', 'HEAD', 'refs/heads/main'])
  }
  let s = ''
  for (let i = from; i < from + commits; i++) {
    const body = `{"n": ${i}, "text": "${'lorem ipsum '.repeat(i % 20)}"}\n`
    s += `commit refs/heads/main\ncommitter svc <svc@localhost> ${1_700_000_000 + i} +0000\ndata 6\nput ${i % 10}\n`
    if (i === from && from > 0) s += 'from refs/heads/main^0\n'
    s += `M 100644 inline t/${i % 4}/${i % 40}.json\ndata ${Buffer.byteLength(body)}\n${body}\n`
  }
  execFileSync('git', ['-C', repo, 'fast-import', '--quiet'], {input: s})
  return repo
}

function allObjects(repo: string): string[] {
  return gitOut(repo, ['cat-file', '--batch-all-objects', '--batch-check=%(objectname)']).trim().split('\n')
}

function key(hex: string): string {
  return Buffer.from(hex, 'hex').toString('latin1')
}

function expectSameAsGit(repo: string, reader: PackReader, ids: string[]): void {
  // git's answers, all in one `cat-file --batch`: "<id> <type> <size>\n<content>\n" each.
  const out = execFileSync('git', ['-C', repo, 'cat-file', '--batch'], {input: ids.join('\n') + '\n', maxBuffer: 1 << 30})
  let at = 0
  for (const hex of ids) {
    const nl = out.indexOf(10, at)
    const [, type, size] = out.toString('latin1', at, nl).split(' ')
    const want = out.subarray(nl + 1, nl + 1 + Number(size))
    at = nl + 1 + Number(size) + 1
    const o = reader.read(key(hex))
    expect(o, hex).to.not.equal(undefined)
    expect(o!.type, hex).to.equal(type)
    expect(Buffer.compare(o!.data, want), `${type} ${hex}`).to.equal(0)
  }
}

function packsIn(repo: string): string[] {
  return readdirSync(join(repo, 'objects', 'pack')).filter((f) => f.endsWith('.pack'))
}

describe('svc pack reader', function () {
  this.timeout(60_000)
  after(() => cleanupTempDirs())

  for (const [kind, config] of [
    ['OFS_DELTA', 'repack.useDeltaBaseOffset=true'],
    ['REF_DELTA', 'repack.useDeltaBaseOffset=false'],
  ] as const) {
    it(`reads every object of a deeply deltified pack (${kind}) as git cat-file does`, () => {
      const repo = repoWith(300)
      gitOut(repo, ['-c', config, 'repack', '-adf', '-q', '--depth=50', '--window=50'])
      const stats = gitOut(repo, ['verify-pack', '-v', join(repo, 'objects', 'pack', packsIn(repo)[0].replace(/\.pack$/, '.idx'))])
      expect(stats).to.match(/chain length = [2-9]/)
      const reader = new PackReader(repo, process.env)
      try {
        expectSameAsGit(repo, reader, allObjects(repo))
      } finally {
        reader.close()
      }
    })
  }

  it('leaves what it returned as it was while it reads on (the chains below are resolved in reused buffers)', () => {
    const repo = repoWith(300)
    gitOut(repo, ['repack', '-adf', '-q', '--depth=50', '--window=50'])
    const ids = allObjects(repo)
    const reader = new PackReader(repo, process.env)
    try {
      // Every object read and kept first, then all compared: a result sharing a chain's buffer would have changed since.
      const kept = ids.map((hex) => reader.read(key(hex))!.data)
      const out = execFileSync('git', ['-C', repo, 'cat-file', '--batch'], {input: ids.join('\n') + '\n', maxBuffer: 1 << 30})
      let at = 0
      ids.forEach((hex, i) => {
        const nl = out.indexOf(10, at)
        const size = Number(out.toString('latin1', at, nl).split(' ')[2])
        expect(Buffer.compare(kept[i], out.subarray(nl + 1, nl + 1 + size)), hex).to.equal(0)
        at = nl + 1 + size + 1
      })
    } finally {
      reader.close()
    }
  })

  it('reads nothing for an id the repository lacks, even one sharing its first bytes with a stored one', () => {
    const repo = repoWith(50)
    gitOut(repo, ['repack', '-adq'])
    const reader = new PackReader(repo, process.env)
    try {
      for (const hex of allObjects(repo).slice(0, 20)) {
        const near = hex.slice(0, 38) + (hex.slice(38) === '00' ? '01' : '00')
        expect(reader.read(key(near)), near).to.equal(undefined)
        expect(reader.read(key(hex)), hex).to.not.equal(undefined)
      }
    } finally {
      reader.close()
    }
  })

  it('follows packs added and removed while it is open, and keeps no removed pack open', () => {
    const repo = repoWith(40)
    gitOut(repo, ['repack', '-adq'])
    const reader = new PackReader(repo, process.env)
    try {
      const before = new Set(allObjects(repo))
      expectSameAsGit(repo, reader, [...before].slice(0, 10))
      repoWith(40, 40, repo)
      gitOut(repo, ['repack', '-dq'])
      expect(packsIn(repo)).to.have.length(2)
      const added = allObjects(repo).filter((h) => !before.has(h))
      expectSameAsGit(repo, reader, added)
      // Compaction: one pack replaces both.
      gitOut(repo, ['repack', '-adfq'])
      expect(reader.refresh()).to.equal(true)
      expectSameAsGit(repo, reader, allObjects(repo))
      if (existsSync('/proc/self/fd')) {
        const open = readdirSync('/proc/self/fd').map((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`)
          } catch {
            return ''
          }
        })
        expect(open.filter((l) => l.includes(repo) && l.includes('(deleted)'))).to.deep.equal([])
      }
    } finally {
      reader.close()
    }
  })

  it('a damaged pack entry is an error naming the pack, not wrong content', () => {
    const repo = repoWith(30)
    gitOut(repo, ['-c', 'pack.compression=0', 'repack', '-adfq', '--window=0'])
    const pack = join(repo, 'objects', 'pack', packsIn(repo)[0])
    // A blob's stored bytes changed in place: its zlib checksum no longer matches.
    const bytes = readFileSync(pack)
    const at = bytes.indexOf('lorem ipsum lorem')
    expect(at).to.be.greaterThan(0)
    bytes.write('XXXXX', at + 3, 'latin1')
    writeFileSync(pack, bytes)
    const reader = new PackReader(repo, process.env)
    try {
      let threw: Error | undefined
      for (const hex of allObjects(repo)) {
        try {
          reader.read(key(hex))
        } catch (error) {
          threw = error as Error
          break
        }
      }
      expect(threw?.message).to.match(/damaged pack entry at \d+ in pack-[0-9a-f]+\.pack/)
    } finally {
      reader.close()
    }
  })
})
