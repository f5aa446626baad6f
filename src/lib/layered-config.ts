import type {ConfigRequest, ConfigResult, ConfigValue} from '@toolkit/kit'

import {InputError} from '@toolkit/kit/errors'
import {findNodeAtLocation, type Node, parseTree, type ParseError, printParseErrorCode} from 'jsonc-parser'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

/**
 * Merges defaults < `<configDir>/config.json` (the namespace's section) < `<configDir>/<namespace>.json`
 * < the plugin's own files (`layers`: svc's config.edn, gw's servers.json) < environment
 * (`TOOLKIT_<NAMESPACE>_<KEY>`) < flags. Files may hold comments (JSONC). Any syntax error,
 * unknown key or wrong type names the file and line.
 */
export function loadLayeredConfig<T extends Record<string, ConfigValue>>(configDir: string, request: ConfigRequest<T>): ConfigResult<T> {
  const {defaults, namespace} = request
  const values: Record<string, ConfigValue> = {...defaults}
  const sources: Record<string, string> = Object.fromEntries(Object.keys(defaults).map((k) => [k, 'default']))
  const files: string[] = []

  const layers: Array<{file: string; path: string[]}> = [
    {file: join(configDir, 'config.json'), path: [namespace]},
    {file: join(configDir, `${namespace}.json`), path: []},
  ]
  for (const {file, path} of layers) {
    const text = readIfExists(file)
    if (text === undefined) continue
    files.push(file)
    const root = parseJsonc(text, file)
    const section = path.length > 0 ? findNodeAtLocation(root, path) : root
    if (!section) continue
    if (section.type !== 'object') fail(file, text, section.offset, `"${path.join('.') || '(top level)'}" must be an object`)
    for (const prop of section.children ?? []) {
      const [keyNode, valueNode] = prop.children ?? []
      const key = String(keyNode?.value)
      if (!(key in defaults)) {
        fail(file, text, keyNode.offset, `unknown key "${key}" (known: ${Object.keys(defaults).join(', ')})`)
      }
      values[key] = checkType(key, valueNode, defaults[key], (msg) => fail(file, text, valueNode.offset, msg))
      sources[key] = `file:${file}:${lineOf(text, valueNode.offset)}`
    }
  }

  for (const layer of request.layers ?? []) {
    files.push(layer.file)
    for (const [key, value] of Object.entries(layer.values)) {
      const line = layer.lines?.[key]
      const where = {code: 'invalid_config', file: layer.file, line}
      if (!(key in defaults)) throw new InputError(`unknown key "${key}"`, where)
      if (!sameType(value, defaults[key])) throw new InputError(`"${key}" must be a ${typeName(defaults[key])}, not ${typeName(value)}`, where)
      values[key] = value
      sources[key] = `file:${layer.file}${line === undefined ? '' : `:${line}`}`
    }
  }

  const env = request.env ?? process.env
  for (const key of Object.keys(defaults)) {
    const name = envName(namespace, key)
    const raw = env[name]
    if (raw === undefined || raw === '') continue
    values[key] = fromEnv(name, raw, defaults[key])
    sources[key] = `env:${name}`
  }

  for (const [key, value] of Object.entries(request.flags ?? {})) {
    if (value === undefined) continue
    values[key] = value as ConfigValue
    sources[key] = 'flag'
  }

  return {files, sources: sources as ConfigResult<T>['sources'], values: values as T}
}

export function envName(namespace: string, key: string): string {
  const snake = key.replaceAll(/([a-z0-9])([A-Z])/g, '$1_$2').replaceAll(/[^A-Za-z0-9]+/g, '_')
  return `TOOLKIT_${namespace.toUpperCase()}_${snake.toUpperCase()}`
}

function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new InputError(`cannot read config file: ${(error as Error).message}`, {code: 'config_unreadable', file})
  }
}

function parseJsonc(text: string, file: string): Node {
  const errors: ParseError[] = []
  const root = parseTree(text, errors, {allowTrailingComma: true, disallowComments: false})
  if (errors.length > 0 || !root) {
    const first = errors[0]
    fail(file, text, first?.offset ?? 0, first ? `invalid JSON: ${describeParseError(first)}` : 'empty file')
  }
  if (root.type !== 'object') fail(file, text, root.offset, 'a config file must hold a JSON object')
  return root
}

function describeParseError(e: ParseError): string {
  // "ValueExpected" -> "value expected"
  return printParseErrorCode(e.error).replaceAll(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()
}

function checkType(key: string, node: Node, fallback: ConfigValue, bad: (msg: string) => never): ConfigValue {
  const want = Array.isArray(fallback) ? 'array' : typeof fallback
  if (want === 'array') {
    if (node.type !== 'array' || !(node.children ?? []).every((c) => c.type === 'string')) bad(`"${key}" must be an array of strings`)
    return (node.children ?? []).map((c) => String(c.value))
  }
  if (node.type !== want) bad(`"${key}" must be a ${want}, not ${node.type}`)
  return node.value as ConfigValue
}

const typeName = (v: ConfigValue): string => (Array.isArray(v) ? 'array' : typeof v)
const sameType = (v: ConfigValue, fallback: ConfigValue): boolean =>
  Array.isArray(fallback) ? Array.isArray(v) && v.every((x) => typeof x === 'string') : typeof v === typeof fallback

function fromEnv(name: string, raw: string, fallback: ConfigValue): ConfigValue {
  if (Array.isArray(fallback)) return raw.split(',').map((s) => s.trim()).filter(Boolean)
  if (typeof fallback === 'number') {
    const n = Number(raw)
    if (!Number.isFinite(n)) throw new InputError(`${name}=${raw} is not a number`, {code: 'invalid_env'})
    return n
  }
  if (typeof fallback === 'boolean') {
    if (/^(1|true|yes|on)$/i.test(raw)) return true
    if (/^(0|false|no|off)$/i.test(raw)) return false
    throw new InputError(`${name}=${raw} is not a boolean (use true or false)`, {code: 'invalid_env'})
  }
  return raw
}

function lineOf(text: string, offset: number): number {
  let line = 1
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

function columnOf(text: string, offset: number): number {
  return offset - text.lastIndexOf('\n', offset - 1)
}

function fail(file: string, text: string, offset: number, message: string): never {
  throw new InputError(message, {code: 'invalid_config', column: columnOf(text, offset), file, line: lineOf(text, offset)})
}
