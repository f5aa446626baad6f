import {closest, InputError} from '@toolkit/kit'
import {readFileSync} from 'node:fs'
import {dirname, extname, isAbsolute, resolve} from 'node:path'

import type {Product} from '../types.js'
import {toCents} from './money.js'

const REQUIRED = ['id', 'title', 'url', 'price', 'category'] as const
const OPTIONAL = ['image', 'description'] as const
const KNOWN: readonly string[] = [...REQUIRED, ...OPTIONAL]

interface RawItem {
  line: number | undefined
  values: Record<string, unknown>
}

/**
 * Reads a product catalog, CSV (header row) or JSON (an array of objects), with the columns
 * id, title, url, price, category and optionally image and description. Image paths are
 * resolved against the catalog's folder so the workspace never depends on the working directory.
 */
export async function readCatalog(file: string): Promise<Product[]> {
  let source: string
  try {
    source = readFileSync(file, 'utf8').replace(/^\uFEFF/, '')
  } catch (error) {
    throw new InputError(`cannot read the catalog: ${(error as Error).message}`, {file})
  }
  const ext = extname(file).toLowerCase()
  let items: RawItem[]
  if (ext === '.json') items = parseJson(source, file)
  else if (ext === '.csv') items = await parseCsv(source, file)
  else throw new InputError(`the catalog must be a .csv or .json file, got "${ext || 'no extension'}"`, {file})
  if (items.length === 0) throw new InputError('the catalog has no products', {file, line: 1})
  const seen = new Set<string>()
  const base = dirname(resolve(file))
  return items.map(({line, values}) => {
    for (const key of Object.keys(values)) {
      if (!KNOWN.includes(key)) {
        const hint = closest(key, KNOWN)
        throw new InputError(`unknown column "${key}"${hint ? ` (did you mean "${hint}"?)` : ''}; columns are ${KNOWN.join(', ')}`, {file, line})
      }
    }
    const str = (key: string, required: boolean): string => {
      const v = values[key]
      if (v === undefined || v === null || v === '') {
        if (required) throw new InputError(`product is missing "${key}"`, {file, line})
        return ''
      }
      if (typeof v !== 'string' && typeof v !== 'number') throw new InputError(`"${key}" must be a string, got ${typeof v}`, {file, line})
      return String(v).trim()
    }
    const id = str('id', true)
    if (seen.has(id)) throw new InputError(`duplicate product id "${id}"`, {file, line})
    seen.add(id)
    const url = str('url', true)
    if (!/^https?:\/\/\S+$/i.test(url)) throw new InputError(`product "${id}": url must be an absolute http(s) URL, got "${url}"`, {file, line})
    const priceRaw = values.price
    const price = typeof priceRaw === 'number' || typeof priceRaw === 'string' ? toCents(priceRaw) : null
    if (price === null) throw new InputError(`product "${id}": price must be an amount such as 12.50, got ${JSON.stringify(priceRaw)}`, {file, line})
    const image = str('image', false)
    return {
      category: str('category', true),
      description: str('description', false),
      id,
      image: image === '' ? null : /^https?:\/\//i.test(image) || isAbsolute(image) ? image : resolve(base, image),
      price_cents: price,
      title: str('title', true),
      url,
    }
  })
}

async function parseCsv(source: string, file: string): Promise<RawItem[]> {
  const {parse} = await import('csv-parse/sync')
  try {
    const rows = parse(source, {bom: true, columns: (h: string[]) => h.map((c) => c.trim().toLowerCase()), info: true, skip_empty_lines: true, trim: true}) as {
      info: {lines: number}
      record: Record<string, string>
    }[]
    return rows.map((r) => ({line: r.info.lines, values: r.record}))
  } catch (error) {
    const e = error as {lines?: number; message: string}
    throw new InputError(`invalid CSV: ${e.message.replace(/^Invalid Record Length: /, '')}`, {file, line: e.lines})
  }
}

function parseJson(source: string, file: string): RawItem[] {
  let data: unknown
  try {
    data = JSON.parse(source)
  } catch (error) {
    const message = (error as Error).message
    const pos = /position (\d+)/.exec(message)
    const line = pos ? source.slice(0, Number(pos[1])).split('\n').length : undefined
    throw new InputError(`invalid JSON: ${message}`, {file, line})
  }
  if (!Array.isArray(data)) throw new InputError('the JSON catalog must be an array of products', {file, line: 1})
  const lines = objectLines(source)
  return data.map((v, i) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new InputError(`product ${i + 1} must be an object`, {file, line: lines[i]})
    return {line: lines[i], values: v as Record<string, unknown>}
  })
}

/** Line of each top-level element's opening brace, so a bad product is reported where it starts. */
function objectLines(source: string): number[] {
  const out: number[] = []
  let depth = 0
  let line = 1
  let inString = false
  for (let i = 0; i < source.length; i++) {
    const c = source[i]
    if (c === '\n') line++
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') inString = true
    else if (c === '[' || c === '{') {
      if (depth === 1) out.push(line)
      depth++
    } else if (c === ']' || c === '}') depth--
  }
  return out
}
