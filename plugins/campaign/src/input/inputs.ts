import {InputError, UsageError} from '@toolkit/kit'
import {existsSync, readFileSync, statSync} from 'node:fs'
import {dirname, resolve} from 'node:path'

import {type CpcKind, kindOfProducts, MIN_DAILY_CLICKS, minimumDailyBudget} from '../budget/cpc.js'
import type {Product} from '../types.js'
import {type ParsedBusiness, readBusinessFile} from './business.js'
import {readCatalog} from './catalog.js'
import {checkLogo} from './logo.js'
import {fromCents} from './money.js'
import {lineOfPath} from './toml-lines.js'

export interface Inputs {
  businessFile: string
  catalog: Product[]
  catalogPath: null | string
  logoPath: null | string
  parsed: ParsedBusiness
}

/**
 * Reads and checks everything `generate` needs before a run directory exists: the business file,
 * the catalog and the logo. Every problem is an error naming the file (and line), so bad input
 * never leaves a half-made run behind.
 */
export async function readInputs(businessFileArg: string): Promise<Inputs> {
  const businessFile = resolve(businessFileArg)
  if (!existsSync(businessFile)) throw new UsageError(`business file not found: ${businessFileArg}`, 'not_found')
  const parsed = await readBusinessFile(businessFile)
  const base = dirname(businessFile)
  const source = readFileSync(businessFile, 'utf8')
  const catalogPath = parsed.catalogFile === null ? null : resolve(base, parsed.catalogFile)
  if (catalogPath !== null && !existsSync(catalogPath)) {
    throw new InputError(`catalog file not found: ${parsed.catalogFile}`, {file: businessFile, line: lineOfPath(source, ['catalog', 'file'])})
  }
  const catalog = catalogPath === null ? [] : await readCatalog(catalogPath)
  const logoPath = parsed.brand.logo === null ? null : resolve(base, parsed.brand.logo)
  if (logoPath !== null) {
    const at = {file: businessFile, line: lineOfPath(source, ['brand', 'logo'])}
    if (!existsSync(logoPath) || !statSync(logoPath).isFile()) throw new InputError(`logo file not found: ${parsed.brand.logo} (looked for ${logoPath})`, at)
    const problem = await checkLogo(logoPath)
    if (problem !== null) throw new InputError(`logo ${parsed.brand.logo}: ${problem}`, at)
  }
  checkBudgetBuysClicks(parsed, catalog, businessFile, source)
  return {businessFile, catalog, catalogPath, logoPath, parsed}
}

/** A daily budget that cannot fund even the cheapest campaign is bad input, not a plan. */
function checkBudgetBuysClicks(parsed: ParsedBusiness, catalog: Product[], file: string, source: string): void {
  const byCategory = new Map<string, Product[]>()
  for (const p of catalog) byCategory.set(p.category.toLowerCase(), [...(byCategory.get(p.category.toLowerCase()) ?? []), p])
  const kinds = new Set<CpcKind>([...byCategory.values()].map((items) => kindOfProducts(items, parsed.budget.currency)))
  if (catalog.length === 0) kinds.add('service')
  if (parsed.formats.includes('search') && parsed.business.brand_terms.length > 0) kinds.add('brand')
  const options = [...kinds].map((k) => ({kind: k, need: minimumDailyBudget(parsed.budget, k)})).filter((o): o is {kind: CpcKind; need: number} => o.need !== null)
  if (options.length === 0) return
  const cheapest = options.reduce((a, b) => (b.need < a.need ? b : a))
  if (parsed.budget.daily_cents >= cheapest.need) return
  const cur = parsed.budget.currency
  throw new InputError(
    `"budget.daily" ${fromCents(parsed.budget.daily_cents)} ${cur} is too small for any campaign: at the lowest CPC estimate (${fromCents(cheapest.need / MIN_DAILY_CLICKS)} ${cur}, ${cheapest.kind} searches) a campaign needs at least ${MIN_DAILY_CLICKS} clicks a day, ${fromCents(cheapest.need)} ${cur}; see docs/campaign.md, "Budget rule"`,
    {file, line: lineOfPath(source, ['budget', 'daily'])},
  )
}
