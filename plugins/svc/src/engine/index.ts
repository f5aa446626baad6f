import {GitEngine, type EngineOptions} from './engine.js'
import type {Engine} from './types.js'

export {GitEngine, type EngineDetails, type EngineOptions} from './engine.js'
export {EngineError, type EngineErrorCode, isEngineError} from './errors.js'
export {canonicalId, DEFAULT_BRANCH, DEFAULT_TABLE, parseId, validateBranch} from './ids.js'
export {createLogger, LOG_LEVELS, type LogLevel, nullLogger} from './logger.js'
export type * from './types.js'

/**
 * Opens (creating if needed) the svc data directory `dataDir` and returns its engine. Only one
 * engine may hold a data directory at a time; call `close()` to flush to Git and release it.
 */
export function openEngine(dataDir: string, options: EngineOptions = {}): Promise<Engine> {
  return GitEngine.open(dataDir, options)
}
