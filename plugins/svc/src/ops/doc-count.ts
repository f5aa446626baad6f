import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {writeFileAtomicSync} from '@toolkit/kit'

import {git} from '../engine/git.js'
import {LAYOUT_NAMES} from '../engine/layout.js'

interface CountCache {
  commit: string
  documents: number
}

const cacheFile = (dataDir: string): string => join(dataDir, LAYOUT_NAMES.documentCount)

function readCache(dataDir: string): CountCache | undefined {
  try {
    const c = JSON.parse(readFileSync(cacheFile(dataDir), 'utf8')) as Partial<CountCache>
    return typeof c.commit === 'string' && /^[0-9a-f]{40}$/.test(c.commit) && Number.isSafeInteger(c.documents) ? (c as CountCache) : undefined
  } catch {
    return undefined
  }
}

function writeCache(dataDir: string, value: CountCache): void {
  try {
    writeFileAtomicSync(cacheFile(dataDir), JSON.stringify(value), {fsync: false})
  } catch {
    // Only a cache: the next count walks the tree again.
  }
}

/**
 * The documents (`.json` files) in a commit's tree, for a backup's manifest. Listing 100k paths
 * with `ls-tree -r` costs seconds, more than an incremental bundle itself, so the last count is
 * kept in the data directory and a later count adds the difference between the two commits:
 * `diff-tree` skips every subtree the commits share, so it costs what changed, not the size.
 * `repo` may be a staged copy of the data directory's repository (it holds the same objects).
 */
export async function countDocuments(dataDir: string, repo: string, commit: string): Promise<number> {
  const cached = readCache(dataDir)
  let documents: number | undefined
  if (cached?.commit === commit) return cached.documents
  if (cached) {
    try {
      const {stdout} = await git(repo, ['diff-tree', '-r', '-z', '--no-renames', '--name-status', cached.commit, commit])
      const parts = stdout.split('\0')
      let n = cached.documents
      for (let i = 0; i + 1 < parts.length; i += 2) {
        if (!parts[i + 1].endsWith('.json')) continue
        if (parts[i] === 'A') n++
        else if (parts[i] === 'D') n--
      }
      documents = n
    } catch {
      // The cached commit is gone (a removed branch after a compaction): count from nothing.
    }
  }
  if (documents === undefined) {
    const {stdout} = await git(repo, ['ls-tree', '-r', '--name-only', commit])
    documents = 0
    for (const line of stdout.split('\n')) if (line.endsWith('.json')) documents++
  }
  writeCache(dataDir, {commit, documents})
  return documents
}
