#!/usr/bin/env node
// Search before and after the bounded search of issue 26, on the same documents and queries in
// one process: "before" is the FTS5 index as svc had it (no prefix index; BM25 of every match,
// then a count of every match), "after" is engine/fts/store.ts (prefix indexes for 3-4
// characters; an unscored walk of at most the first 10,000 matches, BM25 of those only).
// Usage: node bench/svc-fts-window.mjs [--docs 100000] [--queries 300]
import {join} from 'node:path'
import {createRequire} from 'node:module'
import {loadavg} from 'node:os'

import {arg, line, pct, tempDir} from './svc-common.mjs'
import {makeDoc, rand, word} from './svc-fixture.mjs'

const DOCS = arg('docs', 100_000)
const QUERIES = arg('queries', 300)
const BATCH = 2000
const dist = new URL('../plugins/svc/dist/engine/', import.meta.url)
const {IndexStore} = await import(new URL('fts/store.js', dist))
const {matchExpression, tableToken} = await import(new URL('fts/match.js', dist))
const {documentText} = await import(new URL('fulltext.js', dist))
const Database = createRequire(new URL('../plugins/svc/package.json', import.meta.url))('better-sqlite3')

const dir = tempDir()
const docs = Array.from({length: DOCS}, (_, i) => {
  const d = makeDoc(i, i)
  return [d.id, documentText(d)]
})

// Before: the schema and queries of index format 3.
const old = new Database(join(dir, 'before.sqlite'))
old.pragma('journal_mode = WAL')
old.pragma('synchronous = NORMAL')
old.pragma('cache_size = -32000')
old.exec(`CREATE TABLE docs(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sha TEXT NOT NULL);
  CREATE VIRTUAL TABLE text USING fts5(tbl, body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0');`)
const insDoc = old.prepare('INSERT INTO docs(id, sha) VALUES (?, ?)')
const insText = old.prepare('INSERT INTO text(rowid, tbl, body) VALUES (?, ?, ?)')
let t = performance.now()
for (let i = 0; i < DOCS; i += BATCH) old.transaction(() => {
  for (let j = i; j < Math.min(DOCS, i + BATCH); j++) insText.run(insDoc.run(docs[j][0], `sha${j}`).lastInsertRowid, tableToken('items'), docs[j][1])
})()
const beforeBuild = DOCS / ((performance.now() - t) / 1000)
const top = old.prepare(`SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? ORDER BY s LIMIT ? OFFSET ?) x
  JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`)
const count = old.prepare('SELECT count(*) FROM text WHERE text MATCH ?').pluck()
const before = (q) => {
  const m = matchExpression(q)
  const hits = top.all(m, 10, 0)
  return {hits, total: hits.length > 0 && hits.length < 10 ? hits.length : count.get(m)}
}

// After: what svc runs now.
const store = new IndexStore(join(dir, 'after.sqlite'))
t = performance.now()
for (let i = 0; i < DOCS; i += BATCH) store.transaction(() => {
  for (let j = i; j < Math.min(DOCS, i + BATCH); j++) store.put(docs[j][0], `sha${j}`, docs[j][1])
})
const afterBuild = DOCS / ((performance.now() - t) / 1000)
const after = (q) => store.search(q, {limit: 10, offset: 0})

const queries = Array.from({length: QUERIES}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
for (const q of queries.slice(0, 30)) {
  before(q)
  after(q)
}
// Interleaved, so a burst of load on the machine hits both alike.
const lat = {after: [], before: []}
let estimated = 0
let sameTop = 0
for (const q of queries) {
  let s = performance.now()
  const b = before(q)
  lat.before.push(performance.now() - s)
  s = performance.now()
  const a = after(q)
  lat.after.push(performance.now() - s)
  if (a.estimated) estimated++
  else if (JSON.stringify(a.hits.map((h) => h.id)) === JSON.stringify(b.hits.map((h) => h.id))) sameTop++
}
const f = (x) => x.toFixed(2)
console.log(`svc full-text search before/after the bounded search, ${DOCS} documents, ${QUERIES} queries (load ${loadavg().map(f).join(' ')})`)
line('build docs/s: after / before (ratio)', `${afterBuild.toFixed(0)} / ${beforeBuild.toFixed(0)} (${f(afterBuild / beforeBuild)}x)`)
for (const p of [50, 95, 99]) line(`search p${p} ms: after / before (ratio)`, `${f(pct(lat.after, p))} / ${f(pct(lat.before, p))} (${f(pct(lat.after, p) / pct(lat.before, p))}x)`)
line('queries ranked from the window (total estimated)', `${estimated} of ${QUERIES}`)
line('other queries with the same top 10 as before', `${sameTop} of ${QUERIES - estimated}`)
store.close()
old.close()
