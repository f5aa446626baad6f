// Builds everything the CLI runs from: the kit (tsc), the host (tsc), each plugin (esbuild),
// then the oclif manifests, which keep `toolkit --help` from loading every command file.
import {execFileSync} from 'node:child_process'
import {rmSync} from 'node:fs'

import {build} from 'esbuild'

import {buildPlugin} from './build-plugin.mjs'

// The host's start-up path as one file (see src/entry.ts). TypeScript loaders stay external:
// oclif only reaches for them in development mode.
async function bundleEntry() {
  await build({
    banner: {js: "import {createRequire as __createRequire} from 'node:module'; const require = __createRequire(import.meta.url);"},
    bundle: true,
    entryPoints: ['src/entry.ts'],
    external: ['typescript', 'ts-node', 'tsx'],
    format: 'esm',
    logLevel: 'warning',
    // Smaller source compiles faster; names are kept so stack traces stay readable.
    keepNames: true,
    minify: true,
    outfile: 'dist/entry.js',
    platform: 'node',
    target: 'node20',
  })
}

const plugins = ['gw', 'svc', 'campaign']
const tsc = (project) => execFileSync('npx', ['tsc', '-p', project], {stdio: 'inherit'})
// The oclif dev CLI checks npm for its own updates; that is noise in a build.
const manifest = (cwd) =>
  execFileSync('npx', ['oclif', 'manifest'], {cwd, env: {...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true'}, stdio: ['ignore', 'ignore', 'inherit']})

// --host-only rebuilds the kit and the host in place, leaving the plugins' builds alone.
const hostOnly = process.argv.includes('--host-only')
if (!hostOnly) rmSync('packages/kit/dist', {force: true, recursive: true})
tsc('packages/kit/tsconfig.json')
if (!hostOnly) rmSync('dist', {force: true, recursive: true})
tsc('tsconfig.build.json')
await bundleEntry()
if (!hostOnly) await Promise.all(plugins.map((p) => buildPlugin(`plugins/${p}`)))
for (const dir of ['.', ...(hostOnly ? [] : plugins.map((p) => `plugins/${p}`))]) manifest(dir)
