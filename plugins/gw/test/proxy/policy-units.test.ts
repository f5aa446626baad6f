import {expect} from 'chai'

import {compileCidrs, normalizeAddress} from '../../src/proxy/cidr.js'
import {pkceMatches, redirectUriAllowed} from '../../src/proxy/auth-providers/oauth-as.js'

describe('proxy policy helpers', () => {
  describe('CIDR lists', () => {
    const trusted = compileCidrs(['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8'], 'test')
    const cases: Array<[string | undefined, boolean]> = [
      ['10.255.0.1', true],
      ['::ffff:10.1.2.3', true],
      ['11.0.0.1', false],
      ['192.168.1.7', true],
      ['192.168.1.8', false],
      ['::1', true],
      ['fd12::1', true],
      ['fe80::1', false],
      [undefined, false],
      ['not-an-ip', false],
    ]
    for (const [address, expected] of cases) {
      it(`${address ?? '(no address)'} -> ${expected}`, () => expect(trusted(address)).to.equal(expected))
    }
    it('refuses malformed entries, naming them', () => {
      for (const bad of ['10.0.0.0/33', '10.0.0/8', 'example.com', '1.2.3.4/', '::1/129', '1.2.3.4/8/9']) {
        expect(() => compileCidrs([bad], 'oauthAs.trustedSourceCidrs'), bad).to.throw(`oauthAs.trustedSourceCidrs: ${JSON.stringify(bad)}`)
      }
    })
    it('unwraps IPv4-mapped IPv6 peers', () => expect(normalizeAddress('::FFFF:127.0.0.1')).to.equal('127.0.0.1'))
  })

  describe('redirect URI allowlist', () => {
    const allow = ['https://claude.ai/api/mcp/auth_callback', 'http://localhost/oauth/callback', 'http://127.0.0.1:8085/cb']
    const cases: Array<[string, boolean]> = [
      ['https://claude.ai/api/mcp/auth_callback', true],
      ['https://claude.ai/api/mcp/auth_callback?x=1', false],
      ['https://claude.ai.evil.example/api/mcp/auth_callback', false],
      ['http://localhost:53211/oauth/callback', true],
      ['http://localhost:53211/oauth/other', false],
      ['https://localhost:53211/oauth/callback', false],
      ['http://127.0.0.1:9999/cb', true],
      ['http://127.0.0.1:9999/oauth/callback', false],
      ['not a url', false],
    ]
    for (const [uri, expected] of cases) {
      it(`${uri} -> ${expected}`, () => expect(redirectUriAllowed(uri, allow)).to.equal(expected))
    }
  })

  describe('PKCE S256', () => {
    const verifier = 'dBjftJeZ4CVP-mJ92K27uhbUJU1p1r_wW1gFWFOEjXk'
    it('accepts the matching pair (base64url of SHA-256, no padding)', () => expect(pkceMatches(verifier, 'ngF5GsXcbwljx6u133FFr3Xht9xooA_DuaX_3QwODtc')).to.equal(true))
    it('rejects another verifier', () => expect(pkceMatches(`${verifier.slice(0, -1)}l`, 'ngF5GsXcbwljx6u133FFr3Xht9xooA_DuaX_3QwODtc')).to.equal(false))
    it('rejects a verifier that is too short or has forbidden characters', () => {
      expect(pkceMatches('short', 'x')).to.equal(false)
      expect(pkceMatches(`${verifier}+/`, 'x')).to.equal(false)
    })
  })
})
