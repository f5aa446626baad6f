import {existsSync, readdirSync} from 'node:fs'
import {join} from 'node:path'

/** Every file under `dir` (none when it does not exist): what a secrets test sweeps for planted values. */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, {recursive: true, withFileTypes: true})
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
}
