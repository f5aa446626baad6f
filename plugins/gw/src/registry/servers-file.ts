import {InputError} from '@toolkit/kit'
import {access, chmod, mkdir, readFile, rename, stat, unlink, writeFile} from 'node:fs/promises'
import {basename, dirname, join} from 'node:path'

import {type LoadServersOptions, loadServersConfig, serversConfigCandidates} from '../client/config.js'

export interface ServersFileTarget {
  /** Every place looked at, in order. */
  candidates: string[]
  exists: boolean
  /** The file gw reads, or, when none exists yet, the one `gw add` creates. */
  file: string
}

const exists = (f: string) => access(f).then(() => true, () => false)

/**
 * The servers.json that commands read and `gw add` writes: `--config` or GW_CONFIG when given
 * (created if missing), else the first that exists of ./servers.json and the user file, else the
 * user file (`~/.config/gw/servers.json`), so a first `gw add` does not drop a file into whatever
 * directory the user happens to be in.
 */
export async function serversFileTarget(options: LoadServersOptions = {}): Promise<ServersFileTarget> {
  const candidates = serversConfigCandidates(options)
  for (const file of candidates) if (await exists(file)) return {candidates, exists: true, file}
  return {candidates, exists: false, file: candidates.at(-1)!}
}

/**
 * Replaces `file` with `text` atomically (a temporary file in the same directory, renamed over
 * it), after checking that gw reads the new text the way it reads servers.json: a change that
 * would leave a file gw refuses is never written. The file keeps its mode; a new one gets 0600
 * (headers and env may hold credentials).
 */
export async function writeServersFile(file: string, text: string): Promise<void> {
  await mkdir(dirname(file), {recursive: true})
  const mode = await stat(file).then((s) => s.mode & 0o777, () => 0o600)
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`)
  await writeFile(tmp, text, {mode})
  try {
    await chmod(tmp, mode)
    await loadServersConfig({env: {}, file: tmp}).catch((error: Error) => {
      throw new InputError(`the change would make the file invalid: ${error.message.replace(`${tmp}:`, 'line ')}`, {code: 'config_invalid', file})
    })
    await rename(tmp, file)
  } catch (error) {
    await unlink(tmp).catch(() => {})
    throw error
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readServersText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new InputError(`cannot read config file (${(error as Error).message})`, {code: 'config_unreadable', file})
  }
}
