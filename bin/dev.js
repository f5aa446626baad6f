#!/usr/bin/env -S node --import tsx --no-warnings
// Development mode: runs the host's TypeScript sources directly (plugins still load from their dist).
import {main} from '../src/entry.ts'

await main(process.argv.slice(2), import.meta.url)
