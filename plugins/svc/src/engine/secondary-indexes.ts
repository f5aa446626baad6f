import {existsSync, readFileSync} from 'node:fs'

import {writeFileAtomicSync} from '@toolkit/kit'


import {type BranchState, type DocEntry, sortedTableIds} from './branch-state.js'
import {FieldIndex, type IndexDefinition} from './field-index.js'
import type {IndexInfo, Json, Logger} from './types.js'

export type LiveIndex = FieldIndex & {failed?: string}

function parseBody(body: Buffer): Record<string, Json> | undefined {
  try {
    return JSON.parse(body.toString('utf8')) as Record<string, Json>
  } catch {
    return undefined
  }
}

/**
 * The secondary equality indexes of every branch: building one from a table's documents, keeping
 * it in step with writes, and their definitions file (`indexes.json`, see layout.ts), which is
 * all that is stored: the indexes themselves are rebuilt at open.
 */
export class SecondaryIndexes {
  constructor(
    private readonly file: string,
    private readonly log: Logger,
    private readonly readBody: (b: BranchState, id: string, e: DocEntry) => Promise<Buffer>,
    private readonly closed: () => boolean,
  ) {}

  add(b: BranchState, def: IndexDefinition): LiveIndex {
    const idx: LiveIndex = new FieldIndex(def)
    b.indexes ??= new Map()
    b.indexes.set(def.name, idx)
    idx.ready = this.build(b, idx).then(() => {
      idx.built = true
    }, (error: Error) => {
      idx.failed = error.message
      if (this.closed()) return
      this.log.error('secondary index build failed; queries on it scan the table', {branch: b.name, error: error.message, name: def.name})
    })
    return idx
  }

  info(b: BranchState, idx: LiveIndex): IndexInfo {
    return {branch: b.name, documents: idx.size, field: idx.def.field, name: idx.def.name, table: idx.def.table, ...(idx.failed ? {error: idx.failed} : {})}
  }

  /** A usable index on `table.field`, if any. */
  on(b: BranchState, table: string, field: string): LiveIndex | undefined {
    for (const idx of b.indexes?.values() ?? []) if (idx.def.table === table && idx.def.field === field && !idx.failed) return idx
    return undefined
  }

  /** Keeps the branch's indexes on `table` in step with a put (body) or a delete (undefined). */
  write(b: BranchState, table: string, id: string, body: Buffer | undefined): void {
    let doc: Record<string, Json> | undefined
    for (const idx of b.indexes?.values() ?? []) {
      if (idx.def.table !== table) continue
      if (body && doc === undefined) doc = parseBody(body)
      idx.set(id, doc)
    }
  }

  /**
   * Moves `old`'s indexes onto `next`, the same branch at another commit (a follower's pull):
   * only the documents whose blob changed are read again, not the whole table.
   */
  async carry(old: BranchState, next: BranchState): Promise<void> {
    if (!old.indexes?.size) return
    next.indexes = old.indexes
    const tables = new Set([...old.indexes.values()].map((i) => i.def.table))
    const changed: Array<{e?: DocEntry; id: string; table: string}> = []
    for (const table of tables) {
      for (const id of sortedTableIds(next, table)) if (old.docs.get(id)?.sha !== next.docs.get(id)?.sha) changed.push({e: next.docs.get(id), id, table})
      for (const id of sortedTableIds(old, table)) if (!next.docs.has(id)) changed.push({id, table})
    }
    for (let i = 0; i < changed.length; i += 256) {
      const chunk = changed.slice(i, i + 256)
      const bodies = await Promise.all(chunk.map((c) => (c.e ? this.readBody(next, c.id, c.e) : undefined)))
      for (const [j, c] of chunk.entries()) this.write(next, c.table, c.id, bodies[j])
    }
  }

  /** A follower's definitions from its leader: indexes missing here are built, others dropped. */
  adopt(branches: Map<string, BranchState>, defs: Record<string, IndexDefinition[]>): Array<Promise<void> | undefined> {
    const building: Array<Promise<void> | undefined> = []
    for (const b of branches.values()) {
      const want = new Map((Array.isArray(defs[b.name]) ? defs[b.name] : []).filter((d) => d && typeof d.name === 'string' && typeof d.table === 'string' && typeof d.field === 'string').map((d) => [d.name, d]))
      for (const [name, idx] of b.indexes ?? []) {
        const w = want.get(name)
        if (!w || w.table !== idx.def.table || w.field !== idx.def.field) b.indexes!.delete(name)
      }
      for (const d of want.values()) if (!b.indexes?.has(d.name)) building.push(this.add(b, {field: d.field, name: d.name, table: d.table}).ready)
    }
    this.save(branches.values())
    return building
  }

  load(branches: Map<string, BranchState>): void {
    if (!existsSync(this.file)) return
    let defs: Record<string, IndexDefinition[]>
    try {
      defs = (JSON.parse(readFileSync(this.file, 'utf8')) as {branches: Record<string, IndexDefinition[]>}).branches
    } catch (error) {
      this.log.error('secondary index definitions unreadable; ignoring them', {error: (error as Error).message, file: this.file})
      return
    }
    for (const [branch, list] of Object.entries(defs ?? {})) {
      const b = branches.get(branch)
      if (!b || !Array.isArray(list)) continue
      for (const d of list) if (d && typeof d.name === 'string' && typeof d.table === 'string' && typeof d.field === 'string') this.add(b, {field: d.field, name: d.name, table: d.table})
    }
  }

  save(branches: Iterable<BranchState>): void {
    const out: Record<string, IndexDefinition[]> = {}
    for (const b of branches) {
      if (b.indexes?.size) out[b.name] = [...b.indexes.values()].map((i) => i.def)
    }
    writeFileAtomicSync(this.file, `${JSON.stringify({branches: out, format: 1}, null, 2)}\n`)
  }

  /** Reads every current document of the table; writes that land meanwhile win over what was read. */
  private async build(b: BranchState, idx: FieldIndex): Promise<void> {
    const ids = sortedTableIds(b, idx.def.table)
    for (let i = 0; i < ids.length; i += 256) {
      const chunk = ids.slice(i, i + 256).flatMap((id) => {
        const e = b.docs.get(id)
        return e ? [{e, id}] : []
      })
      const bodies = await Promise.all(chunk.map((c) => this.readBody(b, c.id, c.e)))
      for (const [j, {e, id}] of chunk.entries()) {
        if (!b.docs.holds(id, e) || b.indexes?.get(idx.def.name) !== idx) continue
        idx.set(id, parseBody(bodies[j]))
      }
    }
  }
}
