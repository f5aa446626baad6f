import {InputError, ToolkitError} from '@toolkit/kit'
import {spawn} from 'node:child_process'
import {copyFile, mkdir, readFile, unlink, writeFile} from 'node:fs/promises'
import {basename, dirname, join} from 'node:path'

import {type LoadServersOptions, loadServersConfig} from '../client/config.js'
import {serversFileTarget, writeServersFile} from './servers-file.js'

export interface Edited {
  changed: boolean
  created: boolean
  file: string
}

/** `$VISUAL`, else `$EDITOR`, else `vi`, run through the shell so `code --wait` works as written. */
function runEditor(file: string, env: Record<string, string | undefined>): Promise<void> {
  const editor = env.VISUAL || env.EDITOR || 'vi'
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', `${editor} "$1"`, 'editor', file], {env: env as NodeJS.ProcessEnv, stdio: 'inherit'})
    child.once('error', reject)
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new ToolkitError(`the editor (${editor}) exited with ${signal ?? code}; servers.json was not changed`, {code: 'editor_failed'})),
    )
  })
}

/**
 * Opens servers.json in the user's editor. The editor works on a copy; the copy replaces the file
 * (atomically) only when gw can read it, so a typo never leaves a file every command refuses.
 * A rejected copy is kept next to the file and named in the error, so the edit is not lost.
 */
export async function editServersFile(options: LoadServersOptions): Promise<Edited> {
  const env = options.env ?? process.env
  const {exists, file} = await serversFileTarget(options)
  await mkdir(dirname(file), {recursive: true})
  const draft = join(dirname(file), `${basename(file, '.json')}.edit.json`)
  if (exists) await copyFile(file, draft)
  else await writeFile(draft, `${JSON.stringify({gwServers: {}}, null, 2)}\n`, {mode: 0o600})
  const before = await readFile(draft, 'utf8')
  await runEditor(draft, env).catch(async (error) => {
    await unlink(draft).catch(() => {})
    throw error
  })
  const after = await readFile(draft, 'utf8')
  if (after === before && exists) {
    await unlink(draft)
    return {changed: false, created: false, file}
  }
  try {
    await loadServersConfig({env: {}, file: draft})
  } catch (error) {
    throw new InputError(`${(error as Error).message}; servers.json was not changed, your edit is kept in ${draft}`, {code: 'config_invalid'})
  }
  await writeServersFile(file, after)
  await unlink(draft)
  return {changed: true, created: !exists, file}
}
