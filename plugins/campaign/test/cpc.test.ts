import {expect} from 'chai'

import {kindOfBands, kindOfProducts, priceBands, sumBands} from '../src/budget/cpc.js'
import type {Product} from '../src/types.js'

const product = (price_cents: number, category = 'c'): Product => ({category, description: '', id: `p${price_cents}`, image: null, price_cents, title: 't', url: 'https://x.example'})

describe('CPC kind from price bands', () => {
  it('the bands of several categories give the kind of their products\' median price', () => {
    // A seeded walk over many catalogs: the summary's band counts must agree with the median.
    let seed = 7
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
    for (let round = 0; round < 500; round++) {
      const cats = Array.from({length: 1 + Math.floor(next() * 4)}, (_, i) =>
        Array.from({length: Math.floor(next() * 30)}, () => product(Math.round(next() * next() * 40_000), `c${i}`)),
      )
      for (const currency of ['USD', 'GBP', 'JPY', 'XYZ']) {
        const all = cats.flat()
        const summed = kindOfBands(sumBands(cats.map((c) => ({price_bands: priceBands(c, currency)}))))
        const base = ({GBP: 0.8, JPY: 150, USD: 1} as Record<string, number>)[currency] ?? 1
        const prices = all.map((p) => p.price_cents / 100 / base).sort((a, b) => a - b)
        const median = prices[Math.floor(prices.length / 2)]
        const expected = all.length === 0 ? 'service' : median < 15 ? 'value' : median > 100 ? 'premium' : 'standard'
        expect(summed, `${currency} ${JSON.stringify(all.map((p) => p.price_cents))}`).to.equal(expected)
        expect(kindOfProducts(all, currency)).to.equal(expected)
      }
    }
  })
})
