import {existsSync} from 'node:fs'
import {join} from 'node:path'

import {EngineError} from '../engine/errors.js'
import type {LayeredLoader} from '../servers/config-edn.js'
import {type DataDirLayout, dataDirLayout} from '../engine/layout.js'

export {type DataDirLayout, dataDirLayout} from '../engine/layout.js'

/** The layout of an existing svc data directory (engine/layout.ts), or a clear error. */
export function requireDataDir(dataDir: string, options: {indexDir?: string} = {}): DataDirLayout & {dataDir: string} {
  const layout = dataDirLayout(dataDir, options)
  if (!existsSync(join(layout.repo, 'HEAD'))) {
    throw new EngineError('not_found', `${layout.root} is not an svc data directory (no repo/ inside); pass --data-dir of a directory the server created, or --config of its config.edn`)
  }
  return {...layout, dataDir: layout.root}
}

/**
 * The data directory the commands other than `server` work on: `--data-dir` when given, else
 * the one `svc server` would use from the same `config.edn` (`--config`, or ./config.edn when
 * present), else ./data. Resolved exactly as the server resolves it (servers/config-edn.ts; pass the config hook as `load`
 * so TOOLKIT_SVC_DATA_DIR counts too).
 */
export async function resolveDataDir(
  flags: {config?: string; dataDir?: string},
  cwd = process.cwd(),
  load?: LayeredLoader,
): Promise<{configFile?: string; dataDir: string; indexDir?: string; warnings: string[]}> {
  const {loadServerConfig} = await import('../servers/config-edn.js')
  const {config, warnings} = await loadServerConfig({config: flags.config, 'data-dir': flags.dataDir}, {}, cwd, load)
  return {configFile: config.configFile, dataDir: config.dataDir, indexDir: config.index.dir, warnings}
}
