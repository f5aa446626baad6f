import {expect} from 'chai'
import {PassThrough} from 'node:stream'

import {colorEnabled, createOutput} from '../src/lib/output.js'

function capture(isTTY = false) {
  const stdout = Object.assign(new PassThrough(), {isTTY})
  const stderr = Object.assign(new PassThrough(), {isTTY})
  let out = ''
  let err = ''
  stdout.on('data', (d) => (out += d))
  stderr.on('data', (d) => (err += d))
  return {err: () => err, out: () => out, stderr, stdout}
}

describe('output hook', () => {
  it('json: one JSON object per line on stdout, logs and warnings on stderr', () => {
    const c = capture()
    const o = createOutput('json', {env: {}, stderr: c.stderr, stdout: c.stdout})
    o.log('working')
    o.record({a: 1}, 'ignored in json')
    o.warn('careful')
    o.record({b: 'two'})
    expect(c.out()).to.equal('{"a":1}\n{"b":"two"}\n')
    expect(c.err()).to.include('working').and.include('careful')
  })

  it('text: the readable rendering on stdout', () => {
    const c = capture()
    const o = createOutput('text', {env: {}, stderr: c.stderr, stdout: c.stdout})
    o.record({a: 1}, 'one line for a')
    o.record({b: 'two', c: [1]})
    expect(c.out()).to.equal('one line for a\nb: two\nc: [1]\n')
  })

  it('colours only a terminal and never with NO_COLOR', () => {
    expect(colorEnabled({isTTY: true}, {})).to.equal(true)
    expect(colorEnabled({isTTY: true}, {NO_COLOR: '1'})).to.equal(false)
    expect(colorEnabled({isTTY: false}, {})).to.equal(false)
    const c = capture(true)
    createOutput('text', {env: {NO_COLOR: '1'}, stderr: c.stderr, stdout: c.stdout}).warn('plain')
    expect(c.err()).to.equal('Warning: plain\n')
  })

  it('draws no spinner when stderr is not a terminal or the format is json', () => {
    const c = capture(false)
    const s = createOutput('text', {env: {}, stderr: c.stderr, stdout: c.stdout}).spinner('loading')
    s.update('still loading')
    s.succeed('done')
    const t = capture(true)
    createOutput('json', {env: {}, stderr: t.stderr, stdout: t.stdout}).spinner('x').succeed()
    // A terminal nobody sized (0 columns): ora would clear lines forever, so nothing is drawn.
    const z = capture(true)
    createOutput('text', {env: {}, stderr: Object.assign(z.stderr, {columns: 0}), stdout: z.stdout}).spinner('x').succeed('ok')
    expect(c.err() + t.err() + z.err()).to.equal('')
  })
})
