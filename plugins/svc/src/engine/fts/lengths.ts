/**
 * Row lengths (tokens of both columns: bm25's D) kept in memory by rowid, read from FTS5's
 * `text_docsize` the first time a search needs them.
 *
 * Why: a search scored by fts/score.ts needs D of every row it ranks. Read per search, through
 * `json_each`, they cost about 0.5 us a row (3.8 ms for a word in 7,000 of 100k documents), as
 * much as FTS5's whole bm25 for those rows; kept here they cost an array read. A row's D
 * changes only when that row is written, so the store forgets a row when it writes it and
 * forgets them all when another connection commits (fts/store.ts): what is kept is always what
 * `text_docsize` holds. 0 means not known (a row that matches a search holds at least one token).
 * Four bytes per rowid: 4 MB at 1M documents.
 */
import type Database from 'better-sqlite3'

/** The index's columns (tbl, body): the varints of each text_docsize record. */
const COLUMNS = 2

function hexDigit(c: number): number {
  return c <= 57 ? c - 48 : c - 55
}

/** Rowids at or above this are not kept (read each time): the array stays bounded whatever rowids SQLite gives. */
const KEPT_ROWIDS = 1 << 26

export class RowLengths {
  private known = new Uint32Array(0)
  /** The first rowid warm has not read. */
  private warmedTo = 1
  private readonly range: Database.Statement<[number, number], {hex: null | string; n: number; top: null | number}>
  private readonly sizes: Database.Statement<[string], null | string>
  private readonly sizesEach: Database.Statement<[string], {id: number; sz: string}>

  constructor(db: Database.Database) {
    // The listed rows only (JSON, looked up in its order): a range would read every row between them.
    this.sizes = db.prepare<[string], null | string>(`SELECT group_concat(hex(d.sz), '') FROM json_each(?) j JOIN text_docsize d ON d.id = j.value`).pluck()
    // A range with no rowid missing is read positionally (with gaps, warm skips it: searches read those rows).
    this.range = db.prepare(`SELECT (SELECT max(id) FROM text_docsize) AS top, count(*) AS n, group_concat(hex(sz), '') AS hex FROM text_docsize WHERE id BETWEEN ? AND ?`)
    this.sizesEach = db.prepare<[string], {id: number; sz: string}>(`SELECT id, hex(sz) AS sz FROM text_docsize WHERE id IN (SELECT value FROM json_each(?))`)
  }

  /** The length of each of `rows` (ascending), in their order. */
  of(rows: ArrayLike<number>): Float64Array {
    const out = new Float64Array(rows.length)
    const missing: number[] = []
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]
      const d = r < this.known.length ? this.known[r] : 0
      if (d === 0) missing.push(r)
      else out[i] = d
    }
    if (missing.length === 0) return out
    const read = this.read(missing)
    this.reserve(missing.at(-1)!)
    for (let i = 0, k = 0; i < rows.length; i++) {
      if (out[i] !== 0) continue
      const d = read[k++]
      out[i] = d
      if (rows[i] < this.known.length) this.known[rows[i]] = d
    }
    return out
  }

  /**
   * The lengths of `rows` (ascending) from text_docsize: the records in the rows' order, written
   * in hex one after another (a string per row through the driver cost twice as much), each the
   * token count of the two columns as varints.
   */
  private read(rows: number[]): Float64Array {
    // A row without its record would shift every length after it: not expected (every indexed
    // row has one), but then each is read with its id.
    return this.parse(this.sizes.get(JSON.stringify(rows)) ?? '', rows.length) ?? this.readEach(rows)
  }

  /** `rows` lengths from their records in hex one after another; undefined when they are not `rows` records. */
  private parse(hex: string, rows: number): Float64Array | undefined {
    const out = new Float64Array(rows)
    let k = 0
    let column = 0
    let n = 0
    let bytes = 0
    for (let i = 0; i + 1 < hex.length; i += 2) {
      const byte = (hexDigit(hex.charCodeAt(i)) << 4) | hexDigit(hex.charCodeAt(i + 1))
      bytes++
      if (bytes === 9) n = n * 256 + byte
      else n = n * 128 + (byte & 0x7f)
      if (bytes === 9 || (byte & 0x80) === 0) {
        out[k] += n
        n = 0
        bytes = 0
        if (++column === COLUMNS) {
          column = 0
          k++
        }
      }
    }
    return k === rows && column === 0 ? out : undefined
  }

  private readEach(rows: number[]): Float64Array {
    const out = new Float64Array(rows.length)
    const at = new Map(rows.map((r, i) => [r, i]))
    for (const {id, sz} of this.sizesEach.all(JSON.stringify(rows))) out[at.get(id)!] = hexVarintsSum(sz)
    return out
  }

  /**
   * Reads the lengths of the next `count` rowids not read yet by this walk (a range of
   * text_docsize: about a fifth of the cost per row of reading scattered rows), so searches find
   * them known. False when the walk has passed the last row. A clear starts it again.
   */
  warm(count: number): boolean {
    const from = this.warmedTo
    const {hex, n, top} = this.range.get(from, from + count - 1) ?? {hex: null, n: 0, top: null}
    if (top === null) return false
    const to = Math.min(top, from + count - 1)
    this.reserve(to)
    if (n === to - from + 1 && hex !== null) {
      const lengths = this.parse(hex, n)
      if (lengths) for (let i = 0; i < n; i++) if (this.known[from + i] === 0) this.known[from + i] = lengths[i]
    }
    this.warmedTo = to + 1
    return to < top
  }

  /** The row was written (or removed): its length is read again when next needed. */
  forget(rowid: number | bigint): void {
    const r = Number(rowid)
    if (r < this.known.length) this.known[r] = 0
  }

  /** Another connection wrote: every length is read again. */
  clear(): void {
    this.known.fill(0)
    this.warmedTo = 1
  }

  /** Room for rowids up to `top` (not past KEPT_ROWIDS). */
  private reserve(top: number): void {
    if (top < this.known.length || this.known.length >= KEPT_ROWIDS) return
    const grown = new Uint32Array(Math.min(KEPT_ROWIDS, Math.max(top + 1, 2 * this.known.length, 1024)))
    grown.set(this.known)
    this.known = grown
  }
}

/** The sum of the varints written in hex (`hex(sz)` of text_docsize: one per column). */
export function hexVarintsSum(hex: string): number {
  let sum = 0
  let n = 0
  let bytes = 0
  for (let i = 0; i < hex.length; i += 2) {
    const byte = Number.parseInt(hex.slice(i, i + 2), 16)
    bytes++
    if (bytes === 9) {
      sum += n * 256 + byte
      n = 0
      bytes = 0
      continue
    }
    n = n * 128 + (byte & 0x7f)
    if ((byte & 0x80) === 0) {
      sum += n
      n = 0
      bytes = 0
    }
  }
  return sum
}
