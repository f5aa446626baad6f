import {expect} from 'chai'

import {shortName} from '../src/lib/text.js'

describe('shortName: a business name within the 25-character limit, never cut inside a word', () => {
  it('keeps a name that fits as it is', () => {
    expect(shortName('Acme Coffee', 25, 'https://acme-coffee.example')).to.equal('Acme Coffee')
  })

  it('keeps the leading whole words, a hyphen inside a compound being a boundary too', () => {
    expect(shortName('Zyx Quorbfantastiqueroasterssss Kaffeerösterei', 25, 'https://zyx.example')).to.equal('Zyx')
    expect(shortName('Bo-Kaap Koffiebranderijcollectief Amsterdam', 25, 'https://bokaap.example')).to.equal('Bo-Kaap')
    expect(shortName('Bo-Kaapkoffiebranderijcollectief', 25, 'https://bokaap.example')).to.equal('Bo')
  })

  it("takes the site's name when even the first word is longer than the limit", () => {
    expect(shortName('Donaudampfschifffahrtsgesellschaft', 25, 'https://www.dds-kaffee.example/shop')).to.equal('Dds Kaffee')
  })

  it('cuts only a name with neither a boundary nor a short site name', () => {
    expect(shortName('Donaudampfschifffahrtsgesellschaft', 25, 'not a url')).to.equal('Donaudampfschifffahrtsges')
  })
})
