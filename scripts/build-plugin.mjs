// Compiles one plugin package (src -> dist) with esbuild. The shared @toolkit/kit helper is
// bundled in, so a packed plugin tarball needs nothing but its declared npm dependencies.
import {spawnSync} from 'node:child_process'
import {createRequire} from 'node:module'
import {build} from 'esbuild'
import {readdirSync, readFileSync, rmSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

const OCLIF_FROM_HOST = fileURLToPath(new URL('oclif-from-host.mjs', import.meta.url))

/** `@oclif/core` in plugin code resolves to oclif-from-host.mjs, which itself imports the package. */
const oclifFromHost = {
  name: 'oclif-from-host',
  setup(b) {
    b.onResolve({filter: /^@oclif\/core$/}, (args) => (args.importer === OCLIF_FROM_HOST ? {external: true, path: '@oclif/core'} : {path: OCLIF_FROM_HOST}))
  },
}

export async function buildPlugin(dir) {
  const root = resolve(dir)
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const deps = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]
  const entryPoints = walk(join(root, 'src')).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
  rmSync(join(root, 'dist'), {force: true, recursive: true})
  await build({
    bundle: true,
    entryPoints,
    external: deps.flatMap((d) => [d, `${d}/*`]),
    format: 'esm',
    logLevel: 'warning',
    outbase: join(root, 'src'),
    outdir: join(root, 'dist'),
    platform: 'node',
    plugins: [oclifFromHost],
    sourcemap: 'linked',
    splitting: true,
    target: 'node20',
  })
  if (pkg.types) emitDeclarations(root, pkg.types)
}

/**
 * A plugin that exports a Node.js API (`types` in package.json) ships declarations for it: tsc
 * follows the imports of the entry point only, so commands and the bundled kit stay out of them.
 */
function emitDeclarations(root, types) {
  const entry = join(root, types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'))
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const flags = ['--declaration', '--emitDeclarationOnly', '--outDir', join(root, 'dist'), '--rootDir', join(root, 'src'), '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--strict', '--skipLibCheck', '--types', 'node']
  const r = spawnSync(process.execPath, [tsc, ...flags, entry], {encoding: 'utf8'})
  if (r.status !== 0) throw new Error(`declarations for ${entry} failed:\n${r.stdout}${r.stderr}`)
}

function walk(dir) {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]))
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildPlugin(process.argv[2] ?? '.')
}
