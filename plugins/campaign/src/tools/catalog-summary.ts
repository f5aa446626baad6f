import {type PriceBands, priceBands} from '../budget/cpc.js'
import type {Product, Workspace} from '../types.js'

/** Products shown per category in the summary: enough to name a campaign and pick pictures. */
export const TOP_PRODUCTS = 5

export interface CategorySummary {
  max_price_cents: number
  median_price_cents: number
  min_price_cents: number
  name: string
  /** Products priced as value / standard / premium searches (they add up across categories). */
  price_bands: PriceBands
  products: number
  /** The first products, those with a photo first, in catalog order. */
  top_products: Pick<Product, 'id' | 'image' | 'price_cents' | 'title' | 'url'>[]
  /** Products whose photo is a file the images step can crop. */
  with_photo_file: number
}

export interface CatalogSummary {
  categories: CategorySummary[]
  products: number
}

/** Categories that differ only by case are one (their campaigns would share a slug). */
export function categoryKey(name: string): string {
  return name.toLowerCase()
}

export function hasPhotoFile(p: Product): boolean {
  return p.image !== null && !/^https?:/i.test(p.image)
}

/**
 * The catalog by category, small whatever the catalog's size: a model plans campaigns from it
 * and pages through one category with query_catalog only where it needs more, instead of
 * reading thousands of products into its context. Categories come largest first.
 */
export function catalogSummary(ws: Workspace): CatalogSummary {
  const byCategory = new Map<string, {name: string; products: Product[]}>()
  for (const p of ws.input.catalog) {
    const key = categoryKey(p.category)
    const entry = byCategory.get(key) ?? {name: p.category, products: []}
    entry.products.push(p)
    byCategory.set(key, entry)
  }
  const categories = [...byCategory.values()].map(({name, products}): CategorySummary => {
    const prices = products.map((p) => p.price_cents).sort((a, b) => a - b)
    const top = [...products.filter((p) => p.image !== null), ...products.filter((p) => p.image === null)].slice(0, TOP_PRODUCTS)
    return {
      max_price_cents: prices.at(-1) ?? 0,
      median_price_cents: prices[Math.floor(prices.length / 2)] ?? 0,
      min_price_cents: prices[0] ?? 0,
      name,
      price_bands: priceBands(products, ws.input.budget.currency),
      products: products.length,
      top_products: top.map((p) => ({id: p.id, image: p.image, price_cents: p.price_cents, title: p.title, url: p.url})),
      with_photo_file: products.filter((p) => hasPhotoFile(p)).length,
    }
  })
  categories.sort((a, b) => b.products - a.products || a.name.localeCompare(b.name))
  return {categories, products: ws.input.catalog.length}
}
