import {EngineError} from './errors.js'
import type {Doc} from './types.js'

/** The reserved table holding the SQL layer's table definitions (one document per table). */
export const CATALOG_TABLE = '_pg_schema'

export interface CatalogColumn {
  name: string
  notNull?: boolean
  type: string
}

/**
 * Checks a catalog document (`_pg_schema:<table>`) before the SQL layer trusts it. A repository
 * written by an older svc, or edited by hand, can hold anything there: a damaged entry must give
 * an error that names it, never a TypeError from deep inside the planner.
 */
export function checkCatalogEntry(doc: Doc): {columns: CatalogColumn[]} {
  const problem = catalogEntryProblem(doc)
  if (problem) {
    throw new EngineError('damaged', `catalog entry ${doc.id} is damaged: ${problem}; drop and create the table again, or restore it from a backup`)
  }
  return doc as unknown as {columns: CatalogColumn[]}
}

export function catalogEntryProblem(doc: Doc): string | undefined {
  const cols = doc.columns
  if (!Array.isArray(cols)) return `"columns" is ${JSON.stringify(cols)?.slice(0, 40) ?? 'missing'}, not a list of columns`
  if (cols.length === 0) return '"columns" is empty'
  const seen = new Set<string>()
  for (const [i, c] of cols.entries()) {
    if (typeof c !== 'object' || c === null || Array.isArray(c)) return `column ${i + 1} is not an object`
    if (typeof c.name !== 'string' || c.name === '') return `column ${i + 1} has no name`
    if (seen.has(c.name)) return `column "${c.name}" appears twice`
    seen.add(c.name)
    if (typeof c.type !== 'string' || c.type === '') return `column "${c.name}" has no type`
    if (c.notNull !== undefined && typeof c.notNull !== 'boolean') return `column "${c.name}" has a notNull that is not true or false`
  }
  return undefined
}
