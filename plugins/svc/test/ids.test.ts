import {expect} from 'chai'

import {isCanonicalId, parseId} from '../src/engine/ids.js'

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
})
