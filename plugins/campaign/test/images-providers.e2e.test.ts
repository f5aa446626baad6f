import {expect} from 'chai'
import {readdirSync} from 'node:fs'
import {join} from 'node:path'
import sharp from 'sharp'

import {startGemini} from './fakes/gemini.js'
import {startOpenAI} from './fakes/openai.js'
import type {Fake} from './fakes/server.js'
import {exampleDir, readEvents, runCli, runDirIn, tempDir} from './helpers.js'

const SIZES: Record<string, [number, number]> = {landscape: [1200, 628], portrait: [960, 1200], square: [1200, 1200]}

/** Every picture the model made is at its exact size; one it failed (`cropped`) keeps the ratio, cropped from the product photo. */
async function picturesOf(runDir: string, cropped: string[] = []): Promise<string[]> {
  const dir = join(runDir, 'google-ads', 'editor', 'images')
  const files = (readdirSync(dir, {recursive: true}) as string[]).filter((f) => f.endsWith('.jpg'))
  for (const f of files) {
    const kind = /-(landscape|portrait|square)-\d+\.jpg$/.exec(f)?.[1] as string
    const meta = await sharp(join(dir, f)).metadata()
    if (cropped.some((c) => c.endsWith(f))) expect((meta.width ?? 0) / (meta.height ?? 1), f).to.be.closeTo(SIZES[kind][0] / SIZES[kind][1], 0.01)
    else expect([meta.width, meta.height], f).to.deep.equal(SIZES[kind])
  }
  return files
}

describe('campaign generate --images openai|gemini (image models for the images step)', function () {
  this.timeout(180_000)
  let fake: Fake
  afterEach(async () => fake?.close())

  it('openai: every picture from the image API at its exact size; a failed one is reported, cropped from the product photo, and the run succeeds', async () => {
    // Every try for the first picture asked fails (the SDK tries three times), so that picture fails.
    let victim: null | string = null
    fake = await startOpenAI({imageFailures: (prompt) => (victim ??= prompt) === prompt})
    const out = tempDir()
    const env = {OPENAI_API_KEY: 'sk-img-test-123456', OPENAI_BASE_URL: `${fake.url}/v1`}
    const r = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--images', 'openai'], {env, timeoutMs: 120_000})
    expect(r.code, r.stderr).to.equal(0)
    const runDir = runDirIn(out)
    // The same prompt may stand for a picture in two campaigns: each is tried three times and fails.
    const failed = readEvents(runDir).filter((l) => l.event.type === 'step' && l.event.name === 'images' && (l.event.detail as {failed?: string}).failed)
    const files = await picturesOf(runDir, failed.map((l) => String((l.event.detail as {failed: string}).failed)))
    const asked = fake.requests.filter((q) => q.path === '/v1/images/generations')
    expect((asked[0].body as {model: string}).model).to.equal('gpt-image-1')
    expect(failed.length).to.be.greaterThan(0)
    expect(asked.length).to.equal(files.length - failed.length + 3 * failed.length)
    expect(String((failed[0].event.detail as {reason: string}).reason)).to.include('cropped from the product photo instead')
    // --resume of the finished run reuses every picture: no new image request.
    const again = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check', '--images', 'openai'], {env, timeoutMs: 120_000})
    expect(again.code, again.stderr).to.equal(0)
    expect(fake.requests.filter((q) => q.path === '/v1/images/generations').length).to.equal(asked.length)
  })

  it('gemini: pictures from generateContent with an inline image', async () => {
    fake = await startGemini({})
    const out = tempDir()
    const r = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--images', 'gemini'], {env: {GEMINI_API_KEY: 'gem-img-test-1234', GOOGLE_GEMINI_BASE_URL: fake.url}, timeoutMs: 120_000})
    expect(r.code, r.stderr).to.equal(0)
    const files = await picturesOf(runDirIn(out))
    expect(fake.requests.filter((q) => q.path.includes('gemini-2.5-flash-image:generateContent')).length).to.equal(files.length)
  })

  it('an image provider without its key, or an unknown one, exits 2 before the run starts', async () => {
    const out = tempDir()
    const noKey = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--images', 'openai'], {env: {OPENAI_API_KEY: ''}})
    expect(noKey.code).to.equal(2)
    expect(noKey.stderr).to.include('OPENAI_API_KEY')
    const unknown = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--images', 'dalle'], {})
    expect(unknown.code).to.equal(2)
    expect(unknown.stderr).to.include('unknown image provider')
    expect(readdirSync(out)).to.have.length(0)
  })
})
