import {expect} from 'chai'

import {spawnSync} from 'node:child_process'

import {classifyPath, docPath, isCanonicalId, isCanonicalIdBytes, parseId, refFormatProblem, validateBranch} from '../src/engine/ids.js'

describe('svc ids', () => {
  it('isCanonicalId agrees with parseId: true only for valid ids that name their table', () => {
    const samples = [
      'users:1', 'a:b', '_t:k', 'T.9-x:key with spaces', 'users:ключ', 'users:a:b', '0:x',
      'plain', ':key', 'users:', '.t:k', '-t:k', 't/x:k', 'bad table:k', `${'t'.repeat(64)}:k`, `${'t'.repeat(65)}:k`,
      'users:tab\there', 'users:del\u007f', 'users:nl\n', `users:${'k'.repeat(170)}`, `users:${'k'.repeat(171)}`, `users:${'é'.repeat(300)}`,
    ]
    for (const raw of samples) {
      let canonical = false
      try {
        canonical = parseId(raw).id === raw
      } catch {
        canonical = false
      }
      // A false from isCanonicalId only sends the caller to parseId, so it may be conservative for long keys.
      if (isCanonicalId(raw)) expect(canonical, raw).to.equal(true)
      else if (raw.length < 100) expect(canonical, raw).to.equal(false)
    }
    expect(isCanonicalId('users:1')).to.equal(true)
    expect(isCanonicalId('plain')).to.equal(false)
  })

  it('isCanonicalIdBytes agrees with isCanonicalId for ASCII ids and is false for any other byte', () => {
    const samples = [
      'users:1', 'a:b', '_t:k', 'T.9-x:key with spaces', 'users:a:b', '0:x', 'plain', ':key', 'users:', '.t:k', '-t:k', 't/x:k', 'bad table:k',
      `${'t'.repeat(64)}:k`, `${'t'.repeat(65)}:k`, 'users:tab\there', 'users:del\u007f', 'users:nl\n', `users:${'k'.repeat(170)}`, `users:${'k'.repeat(171)}`,
    ]
    for (const raw of samples) {
      // The bytes sit inside a larger buffer, with a colon after them, as a key does in a socket chunk.
      const b = Buffer.from(`*:${raw}:x`)
      expect(isCanonicalIdBytes(b, 2, b.length - 2), raw).to.equal(isCanonicalId(raw))
    }
    const b = Buffer.from('users:ключ')
    expect(isCanonicalIdBytes(b, 0, b.length)).to.equal(false)
  })

  it('refuses exactly the branch names git check-ref-format --branch refuses (and svc keeps to names without /)', () => {
    const names = ['x.', 'x.lock', 'a..b', 'a@{b', 'HEAD', '@', '-x', 'a b', 'a\tb', 'a~1', 'a^', 'a:b', 'a?', 'a*', 'a[b', 'a\\b', '.hidden', 'ok', 'feature-1', 'v1.2', 'a@b', 'x.lockx', 'a/b', 'a//b', 'a/', '/a', 'a/.b', 'a/b.lock', '\u007f']
    for (const name of names) {
      // --branch reads a lone "@" as shorthand for HEAD; as a ref name refs/heads/@ is refused.
      const git = name !== '@' && spawnSync('git', ['check-ref-format', '--branch', name], {encoding: 'utf8'}).status === 0
      expect(refFormatProblem(name) === undefined, `${JSON.stringify(name)}: git says ${git ? 'valid' : 'invalid'}`).to.equal(git)
      if (!git) expect(() => validateBranch(name), name).to.throw(/invalid branch name/)
    }
    expect(validateBranch('feature-1')).to.equal('feature-1')
    expect(() => validateBranch('a/b')).to.throw(/use letters, digits/)
  })

  it('stores a key whose file name would pass 255 bytes under a hashed name that maps back to nothing but its body', () => {
    const long = parseId(`t:${'é'.repeat(256)}`)
    const path = docPath(long)
    const name = path.slice(path.lastIndexOf('/') + 1)
    expect(Buffer.byteLength(name)).to.be.below(255)
    expect(classifyPath(path)).to.deep.equal({kind: 'hashed'})
    expect(classifyPath(`${path}.expires-1700000000000`)).to.deep.equal({at: 1_700_000_000_000, docPath: path, kind: 'expiry'})
    const short = docPath(parseId('t:abc'))
    expect(classifyPath(short)).to.deep.equal({id: 't:abc', kind: 'doc'})
  })
})
