import {expect} from 'chai'
import {join} from 'node:path'

import {combinations, displayUrl} from '../src/report-html/ad-preview.js'
import {pictureDataUrls} from '../src/report-html/pictures.js'
import {picturePaths, renderReportHtml} from '../src/report-html/render.js'
import type {ReportInput} from '../src/run/report.js'
import type {Workspace} from '../src/types.js'
import {readJson, sharedExampleRun} from './helpers.js'

const ad = (headlines: string[], descriptions: string[]) => ({descriptions, final_url: 'https://www.shop.example/x', headlines, path1: 'beans', path2: 'fresh'})

async function exampleInput(): Promise<{input: ReportInput; runDir: string}> {
  const {runDir} = await sharedExampleRun()
  const ws = readJson<Workspace>(join(runDir, 'workspace.json'))
  const input: ReportInput = {exitCode: 0, files: [], issues: [], model: null, provider: 'local', runId: 'r', status: 'success', totals: {cost_usd: null, failed_missions: 0, input_tokens: 0, missions: 1, output_tokens: 0}, urls: null, ws}
  return {input, runDir}
}

describe('report.html pieces', () => {
  it('previews rotate through the headlines and descriptions, three and two at a time, never repeating one in a preview', () => {
    const combos = combinations(ad(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7'], ['d1', 'd2', 'd3']))
    expect(combos).to.deep.equal([
      {descriptions: ['d1', 'd2'], headlines: ['h1', 'h2', 'h3']},
      {descriptions: ['d3', 'd1'], headlines: ['h4', 'h5', 'h6']},
      {descriptions: ['d2', 'd3'], headlines: ['h7', 'h1', 'h2']},
    ])
    // Three headlines and two descriptions make one preview, shown once.
    expect(combinations(ad(['a', 'b', 'c'], ['x', 'y']))).to.have.length(1)
    expect(combinations(ad([], ['x']))).to.deep.equal([])
  })

  it('writes the display URL as Google does: host without www, then the paths', () => {
    expect(displayUrl('https://www.shop.example/deep/page', 'beans', 'fresh')).to.equal('shop.example › beans › fresh')
    expect(displayUrl('not a url', '', '')).to.equal('not a url')
  })

  it('shows text from the workspace as text: markup in a business name or a headline is escaped', async () => {
    const {input} = await exampleInput()
    const ws = structuredClone(input.ws)
    ws.input.business.name = 'Bad <script>alert(1)</script> & Co'
    ws.account.campaigns[0].ad_groups[0].ads[0].headlines[0] = '<img src=x onerror=alert(2)>'
    ws.account.campaigns[0].name = '"><b>x</b>'
    const page = renderReportHtml({...input, ws}, new Map())
    expect(page).not.to.include('<script>').and.not.to.include('<img src=x').and.not.to.include('"><b>')
    expect(page).to.include('Bad &lt;script&gt;alert(1)&lt;/script&gt; &amp; Co').and.to.include('&lt;img src=x onerror=alert(2)&gt;')
  })

  it('embeds the pictures it can read, and marks one that is missing instead of failing', async () => {
    const {input, runDir} = await exampleInput()
    const paths = picturePaths(input)
    expect(paths[0]).to.equal('input/logo.png')
    const pictures = await pictureDataUrls(runDir, [...paths.slice(0, 3), 'google-ads/editor/images/nope.jpg'])
    expect(pictures.get('input/logo.png')).to.match(/^data:image\/png;base64,/)
    expect(pictures.get(paths[1])).to.match(/^data:image\/jpeg;base64,/)
    expect(pictures.get('google-ads/editor/images/nope.jpg')).to.equal(null)
    const page = renderReportHtml(input, pictures)
    expect(page).to.include('picture missing')
    expect(page).not.to.match(/src="(?!data:)/)
  })
})
