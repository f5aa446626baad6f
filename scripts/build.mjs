// Builds everything the CLI runs from: the kit (tsc), the host (tsc), each plugin (esbuild),
// then the oclif manifests, which keep `toolkit --help` from loading every command file.
import {execFileSync} from 'node:child_process'
import {rmSync} from 'node:fs'

import {buildPlugin} from './build-plugin.mjs'

const plugins = ['gw', 'svc', 'campaign']
const tsc = (project) => execFileSync('npx', ['tsc', '-p', project], {stdio: 'inherit'})
const manifest = (cwd) => execFileSync('npx', ['oclif', 'manifest'], {cwd, stdio: ['ignore', 'ignore', 'inherit']})

rmSync('packages/kit/dist', {force: true, recursive: true})
tsc('packages/kit/tsconfig.json')
rmSync('dist', {force: true, recursive: true})
tsc('tsconfig.build.json')
await Promise.all(plugins.map((p) => buildPlugin(`plugins/${p}`)))
for (const dir of ['.', ...plugins.map((p) => `plugins/${p}`)]) manifest(dir)
