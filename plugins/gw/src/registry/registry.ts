import {closest, UsageError} from '@toolkit/kit'

import {type LoadServersOptions, loadServersConfig} from '../client/config.js'

import {hasServer, removeServer, serversSection, setServer} from './json-edit.js'
import {readServersText, serversFileTarget, writeServersFile} from './servers-file.js'

/** Server names become tool prefixes (`<server>__<tool>`) and CLI arguments: keep them plain. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

export interface Added {
  file: string
  name: string
  replaced: boolean
}

/** Adds (or with `force` replaces) one server entry in servers.json, changing nothing else in the file. */
export async function addServerEntry(name: string, entry: Record<string, unknown>, options: LoadServersOptions & {force?: boolean}): Promise<Added> {
  if (!NAME.test(name) || name.includes('__')) {
    throw new UsageError(`server name ${JSON.stringify(name)}: use letters, digits, ".", "-" and "_" (not "__", which separates server and tool in the proxy)`, 'invalid_name')
  }
  const {file} = await serversFileTarget(options)
  const text = (await readServersText(file)) ?? ''
  // A file gw cannot read is reported as gw reads it (file, line, column), before anything is touched.
  if (text.trim() !== '') await loadServersConfig({env: {}, file})
  const replaced = text.trim() !== '' && hasServer(text, name)
  if (replaced && !options.force) throw new UsageError(`server "${name}" already exists in ${file}; add --force to replace it`, 'server_exists')
  await writeServersFile(file, setServer(text, name, entry))
  return {file, name, replaced}
}

/** Removes one server entry; an unknown name is a usage error with the nearest name. */
export async function removeServerEntry(name: string, options: LoadServersOptions): Promise<{file: string; name: string}> {
  const {exists, file} = await serversFileTarget(options)
  const text = exists ? await readServersText(file) : undefined
  if (text !== undefined && text.trim() !== '') await loadServersConfig({env: {}, file})
  if (text === undefined || !hasServer(text, name)) {
    if (text === undefined) throw new UsageError(`unknown server "${name}": ${file} does not exist`, 'unknown_server')
    const section = (JSON.parse(text) as Record<string, Record<string, unknown> | undefined>)[serversSection(text)] ?? {}
    const guess = closest(name, Object.keys(section))
    throw new UsageError(`unknown server "${name}" in ${file}${guess ? `; did you mean "${guess}"?` : ''}`, 'unknown_server')
  }
  await writeServersFile(file, removeServer(text, name))
  return {file, name}
}
