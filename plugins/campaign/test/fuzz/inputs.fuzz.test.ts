import {expect} from 'chai'
import fc from 'fast-check'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {parseBusinessToml} from '../../src/input/business.js'
import {readCatalog} from '../../src/input/catalog.js'
import {exampleDir, tempDir} from '../helpers.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const business = readFileSync(join(exampleDir, 'business.toml'), 'utf8')
const catalogCsv = readFileSync(join(exampleDir, 'catalog.csv'), 'utf8')

/** Accepted, or refused as bad input: exit 2 with the file named; anything else (a TypeError, a crash) fails. */
async function acceptedOrInputError(run: () => Promise<unknown>, file: string, text: string): Promise<'accepted' | 'refused'> {
  try {
    await run()
    return 'accepted'
  } catch (error) {
    const e = error as {exitCode?: number; message: string; name: string}
    expect(e.exitCode, `${e.name}: ${e.message}\nfor: ${text.slice(0, 300)}`).to.equal(2)
    expect(e.message, text.slice(0, 300)).to.include(file)
    return 'refused'
  }
}

/** Mutations of a text: a cut, a duplicated slice, a replaced value after `=`/`,`, random text. */
function mutations(text: string, values: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.tuple(fc.nat({max: text.length}), fc.nat({max: 12})).map(([i, n]) => text.slice(0, i) + text.slice(i + n)),
    fc.tuple(fc.nat({max: text.length}), fc.nat({max: 40})).map(([i, n]) => text.slice(0, i) + text.slice(i, i + n) + text.slice(i)),
    fc.tuple(fc.nat({max: 200}), fc.constantFrom(...values)).map(([k, v]) => {
      let seen = 0
      return text.replace(/(= |,)([^,\n]*)/g, (m, sep: string) => (seen++ === k ? `${sep}${v}` : m))
    }),
    fc.string({maxLength: 60}),
  )
}

// Issue 20: business.toml and catalogs (CSV, JSON) from users: any file is read, or refused with
// exit 2 naming the file; no parser error escapes as a crash.
describe('campaign inputs: mutated business.toml and catalogs are read or refused with exit 2 naming the file (fast-check)', function () {
  this.timeout(fuzzTimeout(60_000))

  it('business.toml (fixed seed)', async () => {
    const values = ['"x"', '-1', '0', '1e400', 'nan', 'inf', '[]', '{}', '[1, "a"]', '"\\u0000"', '"' + 'w'.repeat(5000) + '"', '12.345', 'true', '1979-05-27', '"ftp://x"', '""']
    const outcomes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(mutations(business, values), async (text) => {
        const o = await acceptedOrInputError(() => parseBusinessToml(text, 'fuzz/business.toml'), 'fuzz/business.toml', text)
        outcomes[o] = (outcomes[o] ?? 0) + 1
      }),
      {numRuns: fuzzRuns(300), seed: FUZZ_SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('business.toml outcomes', outcomes)
    expect(outcomes.refused).to.be.greaterThan(0)
  })

  it('catalog CSV and JSON (fixed seed)', async () => {
    const dir = tempDir()
    const values = ['', '"', '""', '-1', '1e400', 'abc', '12.345', 'NaN', '"a,b"', 'javascript:alert(1)', 'images/../../etc/passwd', '\u0000', 'x'.repeat(5000)]
    const asJson = JSON.stringify(
      catalogCsv
        .trim()
        .split('\n')
        .slice(1, 6)
        .map((line) => {
          const [id, title, url, price, category, image] = line.split(',')
          return {category, id, image, price: Number(price), title, url}
        }),
    )
    const outcomes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutations(catalogCsv, values).map((t) => ['csv', t] as const), mutations(asJson, values).map((t) => ['json', t] as const), fc.jsonValue({maxDepth: 3}).map((v) => ['json', JSON.stringify(v)] as const)), async ([ext, text]) => {
        const file = join(dir, `catalog.${ext}`)
        writeFileSync(file, text)
        const o = await acceptedOrInputError(() => readCatalog(file), file, text)
        outcomes[`${ext} ${o}`] = (outcomes[`${ext} ${o}`] ?? 0) + 1
      }),
      {numRuns: fuzzRuns(300), seed: FUZZ_SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('catalog outcomes', outcomes)
    expect(outcomes['csv refused']).to.be.greaterThan(0)
    expect(outcomes['json refused']).to.be.greaterThan(0)
  })
})
