// Compiles one plugin package (src -> dist) with esbuild. The shared @toolkit/kit helper is
// bundled in, so a packed plugin tarball needs nothing but its declared npm dependencies.
import {build} from 'esbuild'
import {readdirSync, readFileSync, rmSync} from 'node:fs'
import {join, resolve} from 'node:path'

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
    sourcemap: 'linked',
    splitting: true,
    target: 'node20',
  })
}

function walk(dir) {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]))
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildPlugin(process.argv[2] ?? '.')
}
