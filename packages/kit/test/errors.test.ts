import {expect} from 'chai'

import {closest, editDistance} from '../src/closest.js'
import {describeError, InputError, ToolkitError, UsageError} from '../src/errors.js'

describe('kit errors', () => {
  it('InputError names the file, line and column and exits 2', () => {
    const e = new InputError('"port" must be a number', {column: 3, file: '/etc/x.json', line: 2})
    expect(describeError(e)).to.deep.equal({code: 'invalid_input', exit: 2, message: '/etc/x.json:2:3: "port" must be a number'})
  })

  it('UsageError exits 2, ToolkitError keeps its own exit code', () => {
    expect(describeError(new UsageError('bad flag'))).to.deep.include({code: 'usage_error', exit: 2})
    expect(describeError(new ToolkitError('down', {code: 'upstream', exit: 3}))).to.deep.equal({code: 'upstream', exit: 3, message: 'down'})
  })

  it('reads errors by shape: oclif exits, Node errno codes, colours and help hints', () => {
    expect(describeError({message: 'nope', oclif: {exit: 127}})).to.deep.equal({code: 'usage_error', exit: 2, message: 'nope'})
    const enoent = Object.assign(new Error('ENOENT: no such file'), {code: 'ENOENT'})
    expect(describeError(enoent)).to.deep.equal({code: 'runtime_error', exit: 1, message: 'ENOENT: no such file'})
    expect(describeError(new Error('\u001B[31mSee more help with --help\u001B[0m\n  real problem  '))).to.deep.include({message: 'real problem'})
    expect(describeError(undefined).message).to.equal('undefined')
  })
})

describe('kit closest', () => {
  it('measures edit distance', () => {
    expect(editDistance('kitten', 'sitting')).to.equal(3)
    expect(editDistance('', 'abc')).to.equal(3)
  })

  it('suggests the nearest candidate only when it is close', () => {
    expect(closest('prot', ['port', 'host'])).to.equal('port')
    expect(closest('PORT', ['port'])).to.equal('port')
    expect(closest('zzzzzzzz', ['port', 'host'])).to.equal(undefined)
  })
})
