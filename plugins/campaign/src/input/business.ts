import {closest, InputError} from '@toolkit/kit'
import {readFileSync} from 'node:fs'
import {z} from 'zod'

import {BID_STRATEGIES, type BidStrategy, CAMPAIGN_TYPES, type Budget, type Business, type CampaignType, type ExportConfig} from '../types.js'
import {displayName} from '../lib/text.js'
import {toCents} from './money.js'
import {lineOfPath} from './toml-lines.js'

const httpUrl = z.string().refine((s) => /^https?:\/\/[^\s/]+/i.test(s), 'must be an absolute http(s) URL')
const text = (min: number, max: number) => z.string().trim().min(min, `must have at least ${min} characters`).max(max, `must have at most ${max} characters`)
const money = z.union([z.number(), z.string()]).refine((v) => toCents(v) !== null && (toCents(v) ?? 0) > 0, 'must be an amount greater than 0 with at most 2 decimals')
// Node's ICU knows every current ISO 4217 code; no table of our own to keep up to date.
const CURRENCIES = new Set(Intl.supportedValuesOf('currency'))
const hex = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour such as "#1f6feb"')

/** The file format. Every table is strict, so a misspelt key is an error with its line. */
export const BusinessFileSchema = z.strictObject({
  brand: z
    .strictObject({
      colors: z.array(hex).max(5, 'at most 5 colours').optional(),
      logo: z.string().min(1).optional(),
    })
    .optional(),
  budget: z.strictObject({
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as "USD"')
      .refine((c) => CURRENCIES.has(c), 'is not an ISO 4217 currency code (such as "USD", "EUR", "BRL")'),
    daily: money,
    max_cpc: money.optional(),
  }),
  business: z.strictObject({
    avoid: z.array(text(1, 80)).optional(),
    brand_terms: z.array(text(1, 80)).optional(),
    competitors: z.array(text(1, 80)).optional(),
    description: text(20, 4000),
    goal: text(1, 200),
    language: z.string().regex(/^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$/, 'must be a BCP 47 tag such as "en" or "pt-BR"'),
    locations: z.array(text(1, 80)).min(1, 'needs at least one location').max(10, 'at most 10 locations'),
    name: text(1, 80),
    pages: z.array(z.strictObject({name: text(1, 80), url: httpUrl})).max(50, 'at most 50 pages').optional(),
    url: httpUrl,
  }),
  campaigns: z
    .strictObject({
      formats: z.array(z.enum(CAMPAIGN_TYPES as [CampaignType, ...CampaignType[]])).min(1).optional(),
      search_bid_strategy: z.enum(BID_STRATEGIES as [BidStrategy, ...BidStrategy[]]).optional(),
    })
    .optional(),
  catalog: z.strictObject({file: z.string().min(1)}).optional(),
  export: z
    .strictObject({
      eu_political_ads: z.boolean().optional(),
      status: z.enum(['enabled', 'paused']).optional(),
      url_suffix: z.string().max(2048).optional(),
    })
    .optional(),
})

export type BusinessFile = z.infer<typeof BusinessFileSchema>

export interface ParsedBusiness {
  brand: {colors: string[]; logo: null | string}
  budget: Budget
  business: Business
  catalogFile: null | string
  export: ExportConfig
  formats: CampaignType[]
  searchBidStrategy: BidStrategy
}

/** Reads and checks business.toml; every problem is an InputError naming the file and line. */
export async function readBusinessFile(file: string): Promise<ParsedBusiness> {
  let source: string
  try {
    source = readFileSync(file, 'utf8')
  } catch (error) {
    throw new InputError(`cannot read the business file: ${(error as Error).message}`, {file})
  }
  return parseBusinessToml(source, file)
}

export async function parseBusinessToml(source: string, file: string): Promise<ParsedBusiness> {
  const {parse, TomlError} = await import('smol-toml')
  let raw: unknown
  try {
    raw = parse(source)
  } catch (error) {
    if (error instanceof TomlError) {
      const first = error.message.split('\n')[0].replace(/^Invalid TOML document: /, '')
      throw new InputError(`invalid TOML: ${first}`, {column: error.column, file, line: error.line})
    }
    throw error
  }
  const result = BusinessFileSchema.safeParse(raw)
  if (!result.success) {
    const issue = result.error.issues[0]
    let path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))
    let message: string
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0]
      const table = path.filter((p) => typeof p === 'string').join('.')
      // A key of this table first; else any key or table name of the file ("budgett" -> "budget").
      const hint = closest(key, keysAt(path)) ?? closest(key, allKeys())
      path = [...path, key]
      message = `unknown key "${key}"${table ? ` in [${table}]` : ''}${hint ? `; did you mean "${hint}"?` : ''}`
    } else if (issue.code === 'invalid_type') {
      const got = valueAt(raw, path)
      message =
        got === undefined
          ? `missing required key "${path.join('.')}"`
          : `"${path.join('.')}" must be ${article(issue.expected)}, got ${describe(got)}`
    } else {
      message = `"${path.join('.')}" ${issue.message}`
    }
    throw new InputError(message, {file, line: lineOfPath(source, path)})
  }
  const data = result.data
  const b = data.business
  const maxCpc = data.budget.max_cpc === undefined ? null : toCents(data.budget.max_cpc)
  const daily = toCents(data.budget.daily) as number
  if (maxCpc !== null && maxCpc > daily) {
    throw new InputError('"budget.max_cpc" is larger than "budget.daily"', {file, line: lineOfPath(source, ['budget', 'max_cpc'])})
  }
  return {
    brand: {colors: data.brand?.colors?.map((c) => c.toLowerCase()) ?? [], logo: data.brand?.logo ?? null},
    budget: {currency: data.budget.currency, daily_cents: daily, max_cpc_cents: maxCpc},
    business: {
      avoid: b.avoid ?? [],
      brand_terms: b.brand_terms ?? [displayName(b.name).toLowerCase()],
      competitors: b.competitors ?? [],
      description: b.description,
      goal: b.goal,
      language: b.language,
      locations: b.locations,
      name: b.name,
      pages: b.pages ?? [],
      url: b.url,
    },
    catalogFile: data.catalog?.file ?? null,
    export: {
      eu_political_ads: data.export?.eu_political_ads ?? false,
      status: data.export?.status ?? 'paused',
      url_suffix: data.export?.url_suffix ?? '',
    },
    formats: data.campaigns?.formats ?? ['search'],
    searchBidStrategy: data.campaigns?.search_bid_strategy ?? 'manual_cpc',
  }
}

function allKeys(): string[] {
  const out = new Set<string>()
  const walk = (schema: z.ZodType) => {
    let s = unwrap(schema)
    if (s instanceof z.ZodArray) s = unwrap(s.element as z.ZodType)
    if (!(s instanceof z.ZodObject)) return
    for (const [k, v] of Object.entries(s.shape as Record<string, z.ZodType>)) {
      out.add(k)
      walk(v)
    }
  }
  walk(BusinessFileSchema)
  return [...out]
}

/** The keys the schema allows at a path of the parsed file (array indexes skipped). */
function keysAt(path: readonly (number | string)[]): string[] {
  let schema: z.ZodType = BusinessFileSchema
  for (const p of path) {
    schema = unwrap(schema)
    if (schema instanceof z.ZodArray) schema = unwrap(schema.element as z.ZodType)
    if (typeof p === 'number') continue
    if (!(schema instanceof z.ZodObject)) return []
    schema = (schema.shape as Record<string, z.ZodType>)[p]
    if (schema === undefined) return []
  }
  schema = unwrap(schema)
  if (schema instanceof z.ZodArray) schema = unwrap(schema.element as z.ZodType)
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : []
}

function unwrap(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodType) : schema
}

function valueAt(root: unknown, path: readonly (number | string)[]): unknown {
  let cur = root
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<string, unknown>)[p as string]
  }
  return cur
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array'
  if (value instanceof Date) return 'a date'
  if (value === null) return 'null'
  if (typeof value === 'object') return 'a table'
  return `${article(typeof value)} (${JSON.stringify(value)})`
}
