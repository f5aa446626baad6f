/**
 * The body terms of a text as the index's tokenizer makes them, for the search caches kept across
 * this connection's writes (fts/row-log.ts): a written row's new instances of each kept phrase.
 *
 * Why FTS5 itself, on an in-memory table of its own, rather than tokenizing here: the counts kept
 * must equal what a read of the index would give, to the instance, and only the same tokenizer
 * with the same options is sure to split, fold and keep exactly the same terms.
 */
import Database from 'better-sqlite3'

/** The tokenizer of the index's `text` table (fts/store.ts), shared so the two cannot differ. */
export const FTS_TOKENIZE = 'unicode61 remove_diacritics 0'

/** A row's body terms: each term and its instances. */
export type Terms = Map<string, number>

export class TextTerms {
  private db?: Database.Database
  private st?: {
    clear: Database.Statement<[]>
    insert: Database.Statement<[number, string]>
    read: Database.Statement<[], {doc: number; n: number; term: string}>
  }

  /** The terms of each of `texts`, in their order. */
  of(texts: string[]): Terms[] {
    const st = this.open()
    const out = texts.map((): Terms => new Map())
    this.db!.transaction(() => {
      for (const [i, text] of texts.entries()) st.insert.run(i + 1, text)
      for (const {doc, n, term} of st.read.iterate()) out[doc - 1].set(term, n)
      st.clear.run()
    })()
    return out
  }

  close(): void {
    this.db?.close()
    this.db = undefined
    this.st = undefined
  }

  private open(): NonNullable<TextTerms['st']> {
    if (this.st) return this.st
    const db = new Database(':memory:')
    db.exec(`
      CREATE VIRTUAL TABLE t USING fts5(body, content='', contentless_delete=1, tokenize='${FTS_TOKENIZE}');
      CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');
    `)
    this.db = db
    this.st = {
      clear: db.prepare(`INSERT INTO t(t) VALUES ('delete-all')`),
      insert: db.prepare('INSERT INTO t(rowid, body) VALUES (?, ?)'),
      read: db.prepare('SELECT doc, term, count(*) AS n FROM v GROUP BY doc, term'),
    }
    return this.st
  }
}

/** The instances of a body phrase (`"w"` or `"w"*`, as match.ts writes them) among `terms`. */
export function phraseInstances(terms: null | Terms, phrase: string): number {
  if (terms === null) return 0
  const prefix = phrase.endsWith('*')
  const word = phrase.slice(1, prefix ? -2 : -1)
  if (!prefix) return terms.get(word) ?? 0
  let n = 0
  for (const [term, k] of terms) if (term.startsWith(word)) n += k
  return n
}
