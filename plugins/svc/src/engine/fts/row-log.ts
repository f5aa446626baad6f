/**
 * The rows this connection wrote since a state of the index, with each row's body terms as last
 * written, so what the search keeps of an older state (fts/score.ts: whole lists, per-row counts)
 * is brought to the current one instead of dropped (issue 26: under a write stream every search
 * otherwise paid bm25's count of its common phrases again, 20-70 ms at 1M documents).
 *
 * A state is a generation: the number of rows this connection has written. Whatever was read at
 * generation g is current once every row written after g is given its last text: the row's
 * instances of each phrase in that text replace whatever the kept data held for the row (the old
 * ones are in the kept data itself). Texts are tokenized only when asked for (fts/tokens.ts).
 * Another connection's commits are not here: the store drops everything kept for them.
 */
import {type Terms, TextTerms} from './tokens.js'

/**
 * Rows (and bytes of text not tokenized yet) kept at most: past either, the store brings what it
 * keeps up to date and starts the log again (full), so a write stream without searches holds
 * neither the texts nor the log's memory.
 */
const LOG_ROWS = 4096
const LOG_TEXT_BYTES = 8 << 20

/** A row's last write since the log's start: its generation, its text until tokenized, then its terms (null: removed). */
interface Written {
  gen: number
  terms?: null | Terms
  text?: string
}

export class RowLog {
  /** Rows written by this connection so far (the generation of the current state). */
  gen = 0
  /** The generation the log starts after: states older than it cannot be brought up to date. */
  private base = 0
  /** The rowid written at each generation after `base` (order[i] at base + i + 1). */
  private readonly order: number[] = []
  private readonly last = new Map<number, Written>()
  private textBytes = 0
  /** The last answer of since: its generation `g` and the log's generation `at` it was made at (callers only read it). */
  private asked?: {at: number; g: number; rows: Array<[number, null | Terms]>}
  private readonly terms = new TextTerms()

  /** Row `rowid` was written (`text`: its body now; null: removed). */
  note(rowid: number, text: null | string): void {
    this.gen++
    this.order.push(rowid)
    const old = this.last.get(rowid)
    if (old?.text !== undefined) this.textBytes -= old.text.length
    this.last.set(rowid, text === null ? {gen: this.gen, terms: null} : {gen: this.gen, text})
    if (text !== null) this.textBytes += text.length
  }

  /** Whether the log is at its bounds (the store then brings what it keeps up to date and clears it). */
  get full(): boolean {
    return this.order.length >= LOG_ROWS || this.textBytes >= LOG_TEXT_BYTES
  }

  /**
   * The rows written after generation `g`, ascending, each with its body terms as last written
   * (null: removed); undefined when the log does not reach back to `g`.
   */
  since(g: number): Array<[number, null | Terms]> | undefined {
    if (g < this.base || g > this.gen) return undefined
    // Everything kept is usually at one generation (brought up to date together: catchUp), so
    // the same rows are asked for once per kept list and count: 48 phrases' counts at 1M documents
    // each listed and sorted the log's 4,096 rows again.
    if (this.asked?.g === g && this.asked.at === this.gen) return this.asked.rows
    const rows: number[] = []
    for (let i = g - this.base; i < this.order.length; i++) {
      const r = this.order[i]
      // A row written several times is listed once, at its last write.
      if (this.last.get(r)!.gen === this.base + i + 1) rows.push(r)
    }
    this.tokenize(rows)
    const changes = rows.sort((x, y) => x - y).map((r): [number, null | Terms] => [r, this.last.get(r)!.terms!])
    this.asked = {at: this.gen, g, rows: changes}
    return changes
  }

  /**
   * Tokenizes the texts written since the last call, in one pass: the store calls it after each
   * transaction while it keeps something, so bringing that up to date never tokenizes a backlog
   * of thousands of rows at once.
   */
  settle(): void {
    if (this.textBytes === 0) return
    this.tokenize([...this.last.keys()])
  }

  /** Starts again at the current generation (nothing kept is older, or it is all dropped). */
  clear(): void {
    this.base = this.gen
    this.asked = undefined
    this.order.length = 0
    this.last.clear()
    this.textBytes = 0
  }

  close(): void {
    this.terms.close()
  }

  /** Tokenizes the texts of `rows` not tokenized yet, in one pass. */
  private tokenize(rows: number[]): void {
    const waiting = rows.map((r) => this.last.get(r)!).filter((w) => w.text !== undefined)
    if (waiting.length === 0) return
    const terms = this.terms.of(waiting.map((w) => w.text!))
    for (const [i, w] of waiting.entries()) {
      this.textBytes -= w.text!.length
      w.terms = terms[i]
      w.text = undefined
    }
  }
}
