import Database from 'better-sqlite3'

import {matchExpression} from '../../src/engine/fts/match.js'
import type {StoreHit} from '../../src/engine/fts/store.js'

/**
 * The general path the full-text tests compare with: FTS5's bm25 over a search's matches, on a
 * connection of its own; among rows of equal score the lower rowid first, then the page by score
 * and id. `ranked`: an estimated search ranks only its first matches (the rows up to the ranked-th).
 */
export function bm25Page(file: string, q: string, table: string | undefined, at: {limit: number; offset: number}, ranked?: number): StoreHit[] {
  const raw = new Database(file, {readonly: true})
  try {
    const match = matchExpression(q, table)!
    const to = ranked === undefined ? Number.MAX_SAFE_INTEGER : raw.prepare<[string, number], number>('SELECT rowid FROM text WHERE text MATCH ? ORDER BY rowid LIMIT 1 OFFSET ?').pluck().get(match, ranked - 1)!
    return raw
      .prepare<[string, number, number, number], StoreHit>(
        `SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? AND rowid <= ? ORDER BY s, rowid LIMIT ? OFFSET ?) x
         JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`,
      )
      .all(match, to, at.limit, at.offset)
  } finally {
    raw.close()
  }
}
