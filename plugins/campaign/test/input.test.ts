import {expect} from 'chai'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {parseBusinessToml} from '../src/input/business.js'
import {readCatalog} from '../src/input/catalog.js'
import {exampleDir, tempDir} from './helpers.js'

const example = readFileSync(join(exampleDir, 'business.toml'), 'utf8')

async function failure(source: string): Promise<{line?: number; message: string}> {
  try {
    await parseBusinessToml(source, 'business.toml')
  } catch (error) {
    const e = error as {exitCode: number; line?: number; message: string}
    expect(e.exitCode).to.equal(2)
    return e
  }
  throw new Error('expected the file to be rejected')
}

function lineOf(source: string, needle: string): number {
  return source.split('\n').findIndex((l) => l.includes(needle)) + 1
}

describe('business.toml', () => {
  it('reads the example, money as integer cents', async () => {
    const b = await parseBusinessToml(example, 'business.toml')
    expect(b.budget).to.deep.equal({currency: 'USD', daily_cents: 12_000, max_cpc_cents: 150})
    expect(b.business.pages).to.have.length(6)
    expect(b.formats).to.deep.equal(['search', 'performance_max', 'demand_gen'])
    expect(b.export.status).to.equal('paused')
  })

  it('turns 12.1 and "12.10" into 1210 cents and refuses three decimals', async () => {
    const a = await parseBusinessToml(example.replace('daily = 120.00', 'daily = 12.1'), 'b.toml')
    expect(a.budget.daily_cents).to.equal(1210)
    const b = await parseBusinessToml(example.replace('daily = 120.00', 'daily = "12.10"'), 'b.toml')
    expect(b.budget.daily_cents).to.equal(1210)
    const bad = example.replace('daily = 120.00', 'daily = 12.345')
    const e = await failure(bad)
    expect(e.message).to.match(/business\.toml:\d+: "budget\.daily" must be an amount/)
    expect(e.line).to.equal(lineOf(bad, 'daily = 12.345'))
  })

  it('rejects an unknown key with its file and line', async () => {
    const bad = example.replace('currency = "USD"', 'currency = "USD"\ndialy = 3')
    const e = await failure(bad)
    expect(e.message).to.contain('unknown key "dialy" in [budget]; did you mean "daily"?')
    expect(e.line).to.equal(lineOf(bad, 'dialy = 3'))
  })

  it('rejects an unknown table', async () => {
    const bad = `${example}\n[budjet]\ndaily = 3\n`
    const e = await failure(bad)
    expect(e.message).to.contain('unknown key "budjet"; did you mean "budget"?')
    expect(e.line).to.equal(lineOf(bad, '[budjet]'))
  })

  it('rejects a wrong type with its line', async () => {
    const bad = example.replace('locations = ["United States"]', 'locations = "United States"')
    const e = await failure(bad)
    expect(e.message).to.contain('"business.locations" must be an array')
    expect(e.line).to.equal(lineOf(bad, 'locations = "United States"'))
  })

  it('points at the right [[business.pages]] entry', async () => {
    const bad = example.replace('url = "https://acme-coffee.example/kettles"', 'url = 42')
    const e = await failure(bad)
    expect(e.message).to.contain('business.pages.3.url')
    expect(e.line).to.equal(lineOf(bad, 'url = 42'))
  })

  it('reports a TOML syntax error with line and column', async () => {
    const bad = example.replace('currency = "USD"', 'currency = "USD')
    const e = await failure(bad)
    expect(e.message).to.match(/^business\.toml:\d+:\d+: invalid TOML/)
    expect(e.line).to.equal(lineOf(bad, 'currency = "USD'))
  })

  it('names a missing required key', async () => {
    const e = await failure(example.replace(/^goal = .*$/m, ''))
    expect(e.message).to.contain('missing required key "business.goal"')
  })

  it('refuses a max CPC above the daily budget and an unknown format', async () => {
    expect((await failure(example.replace('max_cpc = 1.50', 'max_cpc = 500'))).message).to.contain('"budget.max_cpc" is larger')
    const e = await failure(example.replace('"demand_gen"]', '"video"]'))
    expect(e.message).to.contain('campaigns.formats.2')
    expect(e.line).to.equal(lineOf(example, 'formats ='))
  })
})

describe('catalog', () => {
  const write = (name: string, text: string) => {
    const file = join(tempDir(), name)
    writeFileSync(file, text)
    return file
  }
  const header = 'id,title,url,price,category,image,description\n'

  it('reads the example CSV: prices in cents, image paths made absolute', async () => {
    const products = await readCatalog(join(exampleDir, 'catalog.csv'))
    expect(products.length).to.be.at.least(50)
    expect(products[0]).to.include({category: 'Coffee Beans', id: 'AC-001', price_cents: 1290})
    expect(products[0].image).to.equal(join(exampleDir, 'images', 'ac-001.jpg'))
  })

  it('reads JSON', async () => {
    const file = write('c.json', JSON.stringify([{category: 'A', id: '1', price: 3.5, title: 'T', url: 'https://x.example/1'}]))
    const [p] = await readCatalog(file)
    expect(p).to.include({id: '1', image: null, price_cents: 350})
  })

  const bad: [string, string, string, RegExp, number | undefined][] = [
    ['bad price', 'c.csv', `${header}1,T,https://x.example/1,cheap,A,,\n`, /c\.csv:2: product "1": price must be an amount/, 2],
    ['duplicate id', 'c.csv', `${header}1,T,https://x.example/1,1,A,,\n1,U,https://x.example/2,1,A,,\n`, /c\.csv:3: duplicate product id "1"/, 3],
    ['missing title', 'c.csv', `${header}1,,https://x.example/1,1,A,,\n`, /c\.csv:2: product is missing "title"/, 2],
    ['relative url', 'c.csv', `${header}1,T,/one,1,A,,\n`, /url must be an absolute http\(s\) URL/, 2],
    ['unknown column', 'c.csv', 'id,titel,url,price,category\n1,T,https://x.example/1,1,A\n', /unknown column "titel" \(did you mean "title"\?\)/, 2],
    ['ragged row', 'c.csv', `${header}1,T,https://x.example/1\n`, /c\.csv:2: invalid CSV/, 2],
    ['JSON syntax', 'c.json', '[\n{"id": "1",\n}\n]', /c\.json:\d+: invalid JSON/, undefined],
    ['JSON item', 'c.json', '[\n  {"id": "1", "title": "T", "url": "https://x.example", "price": 1, "category": "A"},\n  {"id": "2", "title": "T", "url": "https://x.example", "price": -1, "category": "A"}\n]', /c\.json:3: product "2": price/, 3],
    ['empty', 'c.csv', header, /the catalog has no products/, 1],
    ['extension', 'c.xlsx', 'x', /must be a \.csv or \.json file/, undefined],
  ]
  for (const [name, file, text, message, line] of bad) {
    it(`rejects ${name} with file and line`, async () => {
      const path = write(file, text)
      try {
        await readCatalog(path)
        expect.fail('accepted')
      } catch (error) {
        const e = error as {exitCode: number; line?: number; message: string}
        expect(e.exitCode).to.equal(2)
        expect(e.message).to.match(message)
        if (line !== undefined) expect(e.line).to.equal(line)
      }
    })
  }
})
