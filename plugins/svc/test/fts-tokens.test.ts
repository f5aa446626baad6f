import {expect} from 'chai'

import {asciiTerms, TextTerms} from '../src/engine/fts/tokens.js'
import {seeded32} from './helpers/seeded.js'

/**
 * The terms of a written row's new text, read by the search caches kept across writes
 * (fts/row-log.ts), must be the index's own: text all in ASCII is split here, the rest by FTS5.
 */
describe('svc full-text: the terms of a written text, as the index tokenizes them', () => {
  it('splits and folds every ASCII text exactly as FTS5\'s unicode61 does', () => {
    const tokens = new TextTerms()
    try {
      const texts: string[] = []
      // Every ASCII character alone, between letters, doubled between digits, and at either end.
      for (let c = 0; c < 128; c++) {
        const x = String.fromCharCode(c)
        texts.push(x, `ab${x}cd`, `1${x}${x}2`, `${x}Qz`, `Zq${x}`)
      }
      const next = seeded32(3)
      // Random ASCII, letters and digits most often (repeated terms, mixed case), and documents' text.
      for (let i = 0; i < 500; i++) texts.push(Array.from({length: 1 + next(80)}, () => String.fromCharCode(next(3) === 0 ? next(128) : 'aAbB0zZ9 kaLO'.charCodeAt(next(13)))).join(''))
      texts.push('items:12 12.5 -3 true Kalo kalo KALO kaloba', `${'a'.repeat(1024)} b`)
      const fts5 = tokens.tokenized(texts)
      for (const [i, text] of texts.entries()) expect(asciiTerms(text), JSON.stringify(text)).to.deep.equal(fts5[i])
      // Other text, or a run of letters past the length read here, is left to FTS5.
      for (const text of ['naïve café', 'ǅemal', 'x\u00a0y', `${'a'.repeat(1025)} b`]) expect(asciiTerms(text), text).to.equal(undefined)
      expect(tokens.of(['naïve Café', 'Ab ab'])).to.deep.equal([new Map([['café', 1], ['naïve', 1]]), new Map([['ab', 2]])])
    } finally {
      tokens.close()
    }
  })
})
