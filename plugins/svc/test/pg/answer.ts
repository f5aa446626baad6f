/**
 * What a client sees of one statement (rows as arrays, column names and types, row count, or the
 * SQLSTATE of its error), so tests can compare two paths that must answer the same.
 */
import type pg from 'pg'

export interface Answer {
  code?: string
  fields?: Array<{dataTypeID: number; name: string}>
  rowCount?: null | number
  rows?: unknown[]
}

export async function answer(c: pg.Client, sql: string, values?: unknown[], name?: string): Promise<Answer> {
  try {
    const r = await c.query({name, rowMode: 'array', text: sql, values})
    return {fields: r.fields.map((f) => ({dataTypeID: f.dataTypeID, name: f.name})), rowCount: r.rowCount, rows: r.rows}
  } catch (error) {
    return {code: (error as {code?: string}).code}
  }
}
