import {copyFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {repoRoot} from './cli.js'
import {scratchDir} from './scratch.js'

export const ourPlugins = ['@toolkit/plugin-gw', '@toolkit/plugin-svc', '@toolkit/plugin-campaign']

/**
 * A toolkit installation without some of our plugins: the built host (bin, dist, manifest) with a
 * package.json that does not list them and a node_modules in which they are absent.
 */
export function strippedToolkit(without: string[] = ourPlugins): string {
  const dir = scratchDir('toolkit-stripped-')
  const pjson = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'))
  pjson.oclif.plugins = pjson.oclif.plugins.filter((p: string) => !without.includes(p))
  for (const p of without) delete pjson.dependencies[p]
  delete pjson.workspaces
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pjson, null, 2))
  mkdirSync(join(dir, 'bin'))
  copyFileSync(join(repoRoot, 'bin', 'run.js'), join(dir, 'bin', 'run.js'))
  copyFileSync(join(repoRoot, 'oclif.manifest.json'), join(dir, 'oclif.manifest.json'))
  symlinkSync(join(repoRoot, 'dist'), join(dir, 'dist'))
  const modules = join(dir, 'node_modules')
  mkdirSync(modules)
  for (const entry of readdirSync(join(repoRoot, 'node_modules'))) {
    if (entry === '@toolkit') continue
    symlinkSync(join(repoRoot, 'node_modules', entry), join(modules, entry))
  }
  mkdirSync(join(modules, '@toolkit'))
  for (const entry of readdirSync(join(repoRoot, 'node_modules', '@toolkit'))) {
    if (without.includes(`@toolkit/${entry}`)) continue
    symlinkSync(join(repoRoot, 'node_modules', '@toolkit', entry), join(modules, '@toolkit', entry))
  }
  return join(dir, 'bin', 'run.js')
}
