import {watch} from 'node:fs'
import {basename, dirname} from 'node:path'

import type {ServersConfig} from '../client/config.js'
import type {RunningProxy} from './serve.js'

export interface ReloadTriggers {
  /** Reads the configuration again (the same file and layering as at start). */
  load(): Promise<ServersConfig>
  /** Also reload when this file changes (saved in place or replaced by a rename). */
  watchFile?: string
  proxy: RunningProxy
  /** Called with the outcome of each reload. */
  report(outcome: {added: string[]; changed: string[]; ok: true; removed: string[]} | {error: string; ok: false}): void
}

/**
 * Reloads the proxy's configuration on SIGHUP (and, with `watchFile`, when the file changes),
 * one reload at a time; a reload asked for during another runs once after it. An invalid file
 * is reported and the running configuration kept. Returns the function that stops listening.
 */
export function reloadOnSignal(t: ReloadTriggers): () => void {
  let running: Promise<void> | undefined
  let again = false
  const run = async (): Promise<void> => {
    try {
      const config = await t.load()
      t.report({...(await t.proxy.reload(config)), ok: true})
    } catch (error) {
      t.report({error: (error as Error).message, ok: false})
    }
  }
  const trigger = () => {
    if (running) {
      again = true
      return
    }
    running = run().finally(() => {
      running = undefined
      if (again) {
        again = false
        trigger()
      }
    })
  }
  process.on('SIGHUP', trigger)
  let watcher: ReturnType<typeof watch> | undefined
  let debounce: NodeJS.Timeout | undefined
  if (t.watchFile) {
    // The directory, not the file: editors and atomic writers replace the file, which ends a watch on it.
    const name = basename(t.watchFile)
    watcher = watch(dirname(t.watchFile), (_event, changed) => {
      if (changed !== name) return
      clearTimeout(debounce)
      debounce = setTimeout(trigger, 300)
    })
    watcher.on('error', () => {})
  }
  return () => {
    process.off('SIGHUP', trigger)
    clearTimeout(debounce)
    watcher?.close()
  }
}
