import {InputError} from '@toolkit/kit'
import {applyEdits, type FormattingOptions, modify} from 'jsonc-parser'

/**
 * Minimal edits of servers.json text: only the entry that changes is rewritten, so the user's
 * indentation, key order and the rest of the file stay as they were (jsonc-parser computes the
 * edit against the text rather than re-serialising the document).
 */

/** The servers section the file already uses: `gwServers`, else `mcpServers` (Claude Desktop and most clients), else a new `gwServers`. */
export function serversSection(text: string): 'gwServers' | 'mcpServers' {
  const data = parseObject(text)
  if (data.gwServers === undefined && data.mcpServers !== undefined) return 'mcpServers'
  return 'gwServers'
}

function parseObject(text: string): Record<string, unknown> {
  if (text.trim() === '') return {}
  try {
    const data = JSON.parse(text) as unknown
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) return data as Record<string, unknown>
  } catch {
    // reported below
  }
  throw new InputError('is not a JSON object; fix it (`toolkit gw config edit`) before changing servers', {code: 'config_invalid'})
}

/** The indentation the file already uses (its first indented line), two spaces by default. */
function formatting(text: string): FormattingOptions {
  const indent = /\n([ \t]+)\S/.exec(text)?.[1]
  if (indent?.startsWith('\t')) return {insertSpaces: false, tabSize: 1}
  return {insertSpaces: true, tabSize: indent?.length ?? 2}
}

/** True when `name` is an entry of the servers section. */
export function hasServer(text: string, name: string): boolean {
  const section = parseObject(text)[serversSection(text)]
  return typeof section === 'object' && section !== null && Object.hasOwn(section, name)
}

/** `text` with the entry `name` set to `entry` (added at the end of the section, or replaced in place). */
export function setServer(text: string, name: string, entry: Record<string, unknown>): string {
  // A file created here gets the layout a person would write.
  if (text.trim() === '') return `${JSON.stringify({gwServers: {[name]: entry}}, null, 2)}\n`
  parseObject(text)
  return applyEdits(text, modify(text, [serversSection(text), name], entry, {formattingOptions: formatting(text)}))
}

/** `text` without the entry `name`. */
export function removeServer(text: string, name: string): string {
  return applyEdits(text, modify(text, [serversSection(text), name], undefined, {formattingOptions: formatting(text)}))
}
