import {expect} from 'chai'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {copyExample, runCli, runDirIn, tempDir} from './helpers.js'

/** Pixels of the subject's red in a picture: what the advertiser would see of the product. */
async function redPixels(file: string): Promise<{red: number; width: number}> {
  const {default: sharp} = await import('sharp')
  const {data, info} = await sharp(file).removeAlpha().raw().toBuffer({resolveWithObject: true})
  let red = 0
  for (let i = 0; i < data.length; i += 3) if (data[i] > 170 && data[i + 1] < 90 && data[i + 2] < 90) red++
  return {red, width: info.width}
}

describe('campaign generate: pictures cropped to the subject', function () {
  this.timeout(180_000)

  it('a product photo whose subject sits at one edge keeps the subject in the square and portrait crops', async () => {
    const {default: sharp} = await import('sharp')
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('formats = ["search", "performance_max", "demand_gen"]', 'formats = ["performance_max"]'))
    const catalog = readFileSync(join(dir, 'catalog.csv'), 'utf8').split('\n')
    writeFileSync(join(dir, 'catalog.csv'), [...catalog.slice(0, 13), ''].join('\n'))

    // A 2400x1200 photo of a flat grey backdrop with a striped red object near the right edge:
    // a centred square (x 600-1800) or portrait (x 720-1680) crop would show none of it.
    const stripes = Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="300" height="300"><rect width="300" height="300" fill="#e01010"/>${Array.from({length: 6}, (_, i) => `<rect x="0" y="${i * 50 + 20}" width="300" height="12" fill="#111111"/>`).join('')}</svg>`,
    )
    const photo = await sharp({create: {background: '#b4b4b4', channels: 3, height: 1200, width: 2400}})
      .composite([{input: stripes, left: 2000, top: 450}])
      .jpeg({quality: 92})
      .toBuffer()
    for (const id of ['ac-001', 'ac-002', 'ac-003']) writeFileSync(join(dir, 'images', `${id}.jpg`), photo)
    const source = await redPixels(join(dir, 'images', 'ac-001.jpg'))
    expect(source.red).to.be.greaterThan(50_000)

    const out = tempDir()
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const pictures = join(runDirIn(out), 'google-ads', 'editor', 'images', 'acme-coffee-performance-max')
    for (const [kind, width] of [['square', 1200], ['portrait', 960]] as const) {
      const picture = await redPixels(join(pictures, `coffee-beans-${kind}-1.jpg`))
      // Same scale as the photo (the crop only drops columns): the whole subject is in the picture.
      expect(picture.width, kind).to.equal(width)
      expect(picture.red, kind).to.be.greaterThan(source.red * 0.95)
    }
  })
})
