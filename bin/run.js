#!/usr/bin/env node
import {readFileSync} from 'node:fs'

const argv = process.argv.slice(2)
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  // Nothing to load for the version: answer in oclif's format without starting the framework.
  const {name, version} = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`${name}/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  const {main} = await import('../dist/entry.js')
  await main(argv, import.meta.url)
}
