import {expect} from 'chai'

import {freshHome, jsonLines, runCli} from './helpers/cli.js'

describe('toolkit command line (built bin/run.js)', () => {
  const {env} = freshHome()

  it('prints its version and exits 0', async () => {
    const r = await runCli(['--version'], {env})
    expect(r.code).to.equal(0)
    expect(r.stdout).to.match(/^@toolkit\/cli\/\d+\.\d+\.\d+ /)
  })

  it('lists the three plugin topics in --help', async () => {
    const r = await runCli(['--help'], {env})
    expect(r.code).to.equal(0)
    for (const topic of ['gw', 'svc', 'campaign', 'plugins', 'autocomplete']) expect(r.stdout).to.include(topic)
  })

  it('answers an unknown command with the nearest command and exit 2', async () => {
    const r = await runCli(['svc', 'diagnos'], {env})
    expect(r.code).to.equal(2)
    expect(r.stderr.trim().split('\n')).to.have.length(1)
    expect(r.stderr).to.include('Did you mean "svc diagnose"?')
    expect(r.stdout).to.equal('')
  })

  it('writes an error record on stdout for an unknown command with --format json', async () => {
    const r = await runCli(['campain', 'init', '--format', 'json'], {env})
    expect(r.code).to.equal(2)
    const [record] = jsonLines(r.stdout)
    expect(record).to.deep.include({type: 'error'})
    expect(record.error).to.include({code: 'unknown_command', exit: 2})
  })

  it('names the flag when a flag value is bad, exit 2', async () => {
    const r = await runCli(['config', 'show', '--format', 'xml'], {env})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/^Error: .*--format.*json, text/)
    expect(r.stderr.trim().split('\n')).to.have.length(1)
  })

  it('rejects an unknown flag with exit 2 and an error record in json mode', async () => {
    const r = await runCli(['config', 'show', '--bogus', '--format=json'], {env})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('--bogus')
    expect(jsonLines(r.stdout)[0].type).to.equal('error')
  })

  it('keeps stdout to JSON lines with --format json and sends logs to stderr', async () => {
    const r = await runCli(['config', 'show', '--format', 'json'], {env})
    expect(r.code).to.equal(0)
    const records = jsonLines(r.stdout)
    expect(records).to.deep.include({key: 'logLevel', section: 'toolkit', source: 'default', value: 'info'})
    expect(r.stderr).to.include('config directory')
  })

  it('honours NO_COLOR and prints no escape codes', async () => {
    const r = await runCli(['config', 'show'], {env: {...env, FORCE_COLOR: undefined, NO_COLOR: '1'}})
    expect(r.code).to.equal(0)
    expect(r.stdout + r.stderr).not.to.include('\u001B[')
  })
})
