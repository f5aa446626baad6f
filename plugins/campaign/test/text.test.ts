import {expect} from 'chai'

import {shortName} from '../src/lib/text.js'
import {fit} from '../src/providers/local/copy.js'

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

  it('never ends on a joining word of the name\'s language', () => {
    expect(shortName('Kaffee und Kuchenmanufakturgesellschaft', 25, 'https://kk.example', 'de')).to.equal('Kaffee')
    expect(shortName('Casa do Pão de Queijoartesanalmineiro', 25, 'https://casa.example', 'pt-BR')).to.equal('Casa do Pão')
    // Only that language's joiners: "van" ends an English name.
    expect(shortName('Removal Van Hire of Londonshire', 25, 'https://rv.example', 'en')).to.equal('Removal Van Hire')
    expect(shortName('Removal Van Hirecompanyoflondon', 25, 'https://rv.example', 'en')).to.equal('Removal Van')
  })

  it('spells the site name of an internationalised domain (punycode) in its own letters', () => {
    expect(shortName('Donaudampfschifffahrtsgesellschaft', 25, 'https://bücher.de/', 'de')).to.equal('Bücher')
    expect(shortName('Donaudampfschifffahrtsgesellschaft', 25, 'https://www.xn--caf-dma.example/shop', 'fr')).to.equal('Café')
  })

  it('cuts only a name with neither a boundary nor a short site name', () => {
    expect(shortName('Donaudampfschifffahrtsgesellschaft', 25, 'not a url')).to.equal('Donaudampfschifffahrtsges')
  })
})

describe('fit: copy cut at a word boundary never ends on a joining word', () => {
  it('drops "and", "with", "de" ... left at the end by the cut, as the copy_truncated rule requires', () => {
    expect(fit('Grinders, Brewers and Kettles for Home', 22, 'en')).to.equal('Grinders, Brewers')
    expect(fit('Café com Leite de Coco Orgânico', 19, 'pt-BR')).to.equal('Café com Leite')
    expect(fit('Salt and Pepper', 30, 'en')).to.equal('Salt and Pepper')
    // Only the copy's own language: "van" ends English copy, "/" never ends any.
    expect(fit('Removal Van Hire Services', 12, 'en')).to.equal('Removal Van')
    expect(fit('Grinders / Brewers', 12, 'en')).to.equal('Grinders')
  })
})
