/**
 * An in-memory inverted index with in-place updates and top-k BM25 search. svc's search no longer
 * uses it (the index lives on disk, fts/store.ts); bench/svc-fts.mjs keeps it as the measured
 * baseline for "postings of our own", the alternative to SQLite FTS5.
 *
 * Why not MiniSearch alone: it updates in place (which lunr cannot), but it scores every matching
 * document through Maps and sorts them all, so one common word over 100k documents costs
 * 100-250 ms. Here postings are typed arrays of (slot, term frequency); a query accumulates
 * scores in a reused Float32Array and keeps the best `offset + limit` in a small heap, so the same
 * query costs about a millisecond. Deleted documents are tombstoned and swept by a compaction once
 * they make up a quarter of the slots.
 */

import {tokenize} from './fts/match.js'
import {lowerBound} from './sorted.js'

const K1 = 1.2
const B = 0.75
const PREFIX_WEIGHT = 0.4
const MAX_EXPANSIONS = 64

/** (slot, term frequency) pairs interleaved in one Int32Array: one allocation per term, not two. */
class Postings {
  data = new Int32Array(2)
  n = 0

  push(slot: number, tf: number): void {
    if (this.n * 2 === this.data.length) {
      const d = new Int32Array(this.data.length * 2)
      d.set(this.data)
      this.data = d
    }
    this.data[this.n * 2] = slot
    this.data[this.n * 2 + 1] = tf
    this.n++
  }
}

export interface TextHit {
  id: string
  score: number
}

export interface TextIndexJson {
  docs: Array<[string, number]>
  format: 2
  /** term -> base64 of the Int32 (slot, term frequency) pairs */
  terms: Array<[string, string]>
}


export class TextIndex {
  private count = 0
  private ids: Array<string | undefined> = []
  private lens = new Uint32Array(1024)
  private scores = new Float32Array(1024)
  private live = new Uint8Array(1024)
  private masks = new Uint32Array(1024)
  private touched = new Int32Array(1024)
  private slotOf = new Map<string, number>()
  private sorted: string[] | undefined
  private terms = new Map<string, Postings>()
  private totalLen = 0

  get documentCount(): number {
    return this.count
  }

  static fromJSON(json: TextIndexJson): TextIndex {
    if (json.format !== 2 || !Array.isArray(json.docs) || !Array.isArray(json.terms)) throw new Error('unknown index format')
    const ix = new TextIndex()
    ix.grow(json.docs.length)
    for (const [id, len] of json.docs) {
      const slot = ix.ids.length
      ix.ids.push(id)
      ix.slotOf.set(id, slot)
      ix.lens[slot] = len
      ix.live[slot] = 1
      ix.totalLen += len
      ix.count++
    }
    for (const [term, b64] of json.terms) {
      const p = new Postings()
      const b = Buffer.from(b64, 'base64')
      if (b.length === 0 || b.length % 8 !== 0) throw new Error(`postings of ${term} are inconsistent`)
      p.data = new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length))
      p.n = p.data.length / 2
      for (let i = 0; i < p.n; i++) if (p.data[2 * i] < 0 || p.data[2 * i] >= ix.ids.length) throw new Error(`postings of ${term} point outside the index`)
      ix.terms.set(term, p)
    }
    return ix
  }

  /** Adds a document, or replaces it if the id is indexed. */
  add(id: string, text: string): void {
    this.remove(id)
    const tokens = tokenize(text)
    const tf = new Map<string, number>()
    for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1)
    const slot = this.ids.length
    this.grow(slot + 1)
    this.ids.push(id)
    this.slotOf.set(id, slot)
    this.lens[slot] = tokens.length
    this.live[slot] = 1
    this.totalLen += tokens.length
    this.count++
    for (const [term, n] of tf) {
      let p = this.terms.get(term)
      if (!p) {
        p = new Postings()
        this.terms.set(term, p)
        this.sorted = undefined
      }
      p.push(slot, n)
    }
  }

  has(id: string): boolean {
    return this.slotOf.has(id)
  }

  remove(id: string): boolean {
    const slot = this.slotOf.get(id)
    if (slot === undefined) return false
    this.slotOf.delete(id)
    this.ids[slot] = undefined
    this.live[slot] = 0
    this.totalLen -= this.lens[slot]
    this.count--
    const dead = this.ids.length - this.count
    if (dead > 1000 && dead > this.ids.length / 4) this.compact()
    return true
  }

  /**
   * Documents containing every query word (the last word, if 3+ characters, also matches as a
   * prefix, at a lower weight), best first. `accept` filters by id (a table prefix, say).
   */
  search(query: string, options: {accept?: (id: string) => boolean; limit: number; offset: number}): {hits: TextHit[]; total: number} {
    const words = [...new Set(tokenize(query))].slice(0, 32)
    if (words.length === 0 || this.count === 0) return {hits: [], total: 0}
    const avg = this.totalLen / Math.max(1, this.count)
    let touchedN = 0
    const touched = this.touched
    // Rarest word first; later words only visit documents that matched every earlier one, so a
    // common word in a query costs no more than the rare word's matches.
    const plan = words
      .map((w, i) => {
        const terms = this.expand(w, i === words.length - 1)
        return {size: terms.reduce((n, [t]) => n + this.terms.get(t)!.n, 0), terms}
      })
      .sort((a, b) => a.size - b.size)
    if (plan[0].size === 0) return {hits: [], total: 0}
    const full = plan.length === 32 ? 0xffffffff : ((1 << plan.length) >>> 0) - 1
    const {lens, live, masks, scores} = this
    for (let w = 0; w < plan.length; w++) {
      const bit = (1 << w) >>> 0
      const need = (bit - 1) >>> 0
      for (const [term, weight] of plan[w].terms) {
        const p = this.terms.get(term)!
        const idf = Math.log(1 + (this.count - p.n + 0.5) / (p.n + 0.5))
        const {data} = p
        const end = p.n * 2
        for (let i = 0; i < end; i += 2) {
          const s = data[i]
          const m = masks[s]
          // A word counts once per document: the exact term when it matches, else its first prefix match.
          if ((m & need) !== need || (m & bit) !== 0 || live[s] === 0) continue
          const tf = data[i + 1]
          if (w === 0) touched[touchedN++] = s
          masks[s] = m | bit
          scores[s] += (weight * idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * lens[s]) / avg))
        }
      }
    }
    const k = options.offset + options.limit
    // Min-heap of the best k (score, slot): O(matches * log k) instead of sorting every match.
    const heapS: number[] = []
    const heapI: number[] = []
    let total = 0
    for (let t = 0; t < touchedN; t++) {
      const s = touched[t]
      const ok = masks[s] === full && (options.accept === undefined || options.accept(this.ids[s]!))
      const score = scores[s]
      masks[s] = 0
      scores[s] = 0
      if (!ok) continue
      total++
      if (heapS.length < k) {
        heapS.push(score)
        heapI.push(s)
        let i = heapS.length - 1
        while (i > 0) {
          const parent = (i - 1) >> 1
          if (heapS[parent] <= heapS[i]) break
          ;[heapS[parent], heapS[i]] = [heapS[i], heapS[parent]]
          ;[heapI[parent], heapI[i]] = [heapI[i], heapI[parent]]
          i = parent
        }
      } else if (k > 0 && score > heapS[0]) {
        heapS[0] = score
        heapI[0] = s
        let i = 0
        for (;;) {
          const l = 2 * i + 1
          const r = l + 1
          let m = i
          if (l < heapS.length && heapS[l] < heapS[m]) m = l
          if (r < heapS.length && heapS[r] < heapS[m]) m = r
          if (m === i) break
          ;[heapS[m], heapS[i]] = [heapS[i], heapS[m]]
          ;[heapI[m], heapI[i]] = [heapI[i], heapI[m]]
          i = m
        }
      }
    }
    const order = heapI.map((s, i) => ({id: this.ids[s]!, score: heapS[i]})).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
    return {hits: order.slice(options.offset, k), total}
  }

  toJSON(): TextIndexJson {
    this.compact()
    const docs: Array<[string, number]> = this.ids.map((id, s) => [id!, this.lens[s]])
    const terms: Array<[string, string]> = []
    for (const [term, p] of this.terms) terms.push([term, Buffer.from(p.data.buffer, 0, p.n * 8).toString('base64')])
    return {docs, format: 2, terms}
  }

  /** Drops tombstoned slots and renumbers the live ones. */
  private compact(): void {
    if (this.ids.length === this.count) return
    const remap = new Int32Array(this.ids.length).fill(-1)
    const ids: string[] = []
    const lens = new Uint32Array(Math.max(1024, this.count))
    for (let s = 0; s < this.ids.length; s++) {
      const id = this.ids[s]
      if (id === undefined) continue
      remap[s] = ids.length
      lens[ids.length] = this.lens[s]
      ids.push(id)
    }
    for (const [term, p] of this.terms) {
      let j = 0
      for (let i = 0; i < p.n; i++) {
        const to = remap[p.data[2 * i]]
        if (to === -1) continue
        p.data[2 * j] = to
        p.data[2 * j + 1] = p.data[2 * i + 1]
        j++
      }
      p.n = j
      if (j === 0) {
        this.terms.delete(term)
        this.sorted = undefined
      }
    }
    this.ids = ids
    this.lens = lens
    this.slotOf = new Map(ids.map((id, s) => [id, s]))
    this.scores = new Float32Array(lens.length)
    this.masks = new Uint32Array(lens.length)
    this.touched = new Int32Array(lens.length)
    this.live = new Uint8Array(lens.length)
    this.live.fill(1, 0, ids.length)
  }

  /** The indexed terms a query word matches, with their weight; prefixes only for the last word (typeahead). */
  private expand(word: string, prefix: boolean): Array<[string, number]> {
    const out: Array<[string, number]> = []
    if (this.terms.has(word)) out.push([word, 1])
    if (!prefix || word.length < 3) return out
    this.sorted ??= [...this.terms.keys()].sort()
    const a = this.sorted
    for (let i = lowerBound(a, word); i < a.length && out.length < MAX_EXPANSIONS && a[i].startsWith(word); i++) {
      if (a[i] !== word) out.push([a[i], PREFIX_WEIGHT])
    }
    return out
  }

  private grow(size: number): void {
    if (size <= this.lens.length) return
    let cap = this.lens.length
    while (cap < size) cap *= 2
    const lens = new Uint32Array(cap)
    lens.set(this.lens)
    this.lens = lens
    const scores = new Float32Array(cap)
    scores.set(this.scores)
    this.scores = scores
    const masks = new Uint32Array(cap)
    masks.set(this.masks)
    this.masks = masks
    const live = new Uint8Array(cap)
    live.set(this.live)
    this.live = live
    this.touched = new Int32Array(cap)
  }
}
