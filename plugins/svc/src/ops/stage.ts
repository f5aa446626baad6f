import {randomBytes} from 'node:crypto'
import {copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {git} from '../engine/git.js'

/** A consistent point of a repository: its branch refs, and a private repository that holds exactly them. */
export interface StagedRepo {
  /**
   * Root of the staged copy: `repo/` (a bare repository) and `indexes.json` when present. The
   * full-text index is not staged: it is derived data, rebuilt from the commits after a restore.
   */
  dir: string
  refs: Array<{commit: string; name: string}>
  repo: string
  remove(): void
}

/** Where ops keeps its temporary files: inside the data directory, so hard links work. */
export function opsTempDir(dataDir: string, prefix: string): string {
  const dir = join(dataDir, '.ops', `${prefix}-${randomBytes(6).toString('hex')}`)
  mkdirSync(dir, {recursive: true})
  return dir
}

export async function branchRefs(repo: string): Promise<Array<{commit: string; name: string}>> {
  const {stdout} = await git(repo, ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/'])
  return stdout.split('\n').filter(Boolean).map((l) => {
    const [commit, name] = l.split(' ')
    return {commit, name}
  })
}

/**
 * Takes a consistent point of a live repository without stopping writes: `flush` puts every
 * acknowledged write into Git, the branch refs are read once, and the object files are
 * hard-linked into a private bare repository whose refs are those values. Git never changes an
 * object file in place, so the copy stays valid while the server keeps committing and
 * repacking; a pack removed by a repack while the links are made restarts the linking (the
 * repack writes its new pack before it deletes the old ones, so a clean pass holds every object).
 */
export async function stageRepository(dataDir: string, flush: () => Promise<void>): Promise<StagedRepo> {
  const source = join(dataDir, 'repo')
  await flush()
  const refs = await branchRefs(source)
  const dir = opsTempDir(dataDir, 'stage')
  const repo = join(dir, 'repo')
  const remove = (): void => rmSync(dir, {force: true, recursive: true})
  try {
    for (const d of ['refs/heads', 'refs/tags', 'objects/pack', 'objects/info']) mkdirSync(join(repo, d), {recursive: true})
    writeFileSync(join(repo, 'HEAD'), 'ref: refs/heads/main\n')
    copyFileSync(join(source, 'config'), join(repo, 'config'))
    writeFileSync(join(repo, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${[...refs].sort((a, b) => (a.name < b.name ? -1 : 1)).map((r) => `${r.commit} ${r.name}\n`).join('')}`)
    if (existsSync(join(dataDir, 'indexes.json'))) copyFileSync(join(dataDir, 'indexes.json'), join(dir, 'indexes.json'))
    for (let attempt = 0; ; attempt++) {
      if (linkObjects(join(source, 'objects'), join(repo, 'objects'))) break
      if (attempt >= 20) throw new Error('the repository kept changing under the backup (20 attempts); try again')
      rmSync(join(repo, 'objects'), {force: true, recursive: true})
      for (const d of ['objects/pack', 'objects/info']) mkdirSync(join(repo, d), {recursive: true})
    }
    return {dir, refs, remove, repo}
  } catch (error) {
    remove()
    throw error
  }
}

/** Links every loose object and complete pack; false when a file vanished meanwhile. */
function linkObjects(from: string, to: string): boolean {
  const link = (a: string, b: string): boolean => {
    try {
      linkSync(a, b)
      return true
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT') return false
      // Another filesystem (a data directory spread over mounts): copy instead.
      if (code === 'EXDEV' || code === 'EPERM') {
        copyFileSync(a, b)
        return true
      }
      throw error
    }
  }
  for (const d of readdirSync(from)) {
    if (/^[0-9a-f]{2}$/.test(d)) {
      let files: string[]
      try {
        files = readdirSync(join(from, d))
      } catch {
        continue
      }
      const objects = files.filter((f) => /^[0-9a-f]{38}$/.test(f))
      if (objects.length === 0) continue
      mkdirSync(join(to, d), {recursive: true})
      for (const f of objects) if (!link(join(from, d, f), join(to, d, f))) return false
    }
  }
  const packDir = join(from, 'pack')
  const files = existsSync(packDir) ? readdirSync(packDir) : []
  for (const f of files) {
    // A pack is complete once its index is in place; tmp_ files and .keep markers stay behind.
    if (!f.endsWith('.idx')) continue
    const base = f.slice(0, -4)
    if (!files.includes(`${base}.pack`)) continue
    if (!link(join(packDir, `${base}.pack`), join(to, 'pack', `${base}.pack`))) return false
    if (!link(join(packDir, f), join(to, 'pack', f))) return false
    // The reverse index and the reachability bitmap belong to their pack and are as immutable
    // as it is. Without the bitmap, `git bundle create main ^base` walks the base commit's whole
    // tree to know what to leave out: seconds for 100k documents instead of a lookup.
    for (const ext of ['rev', 'bitmap']) if (files.includes(`${base}.${ext}`) && !link(join(packDir, `${base}.${ext}`), join(to, 'pack', `${base}.${ext}`))) return false
  }
  linkCommitGraph(join(from, 'info'), join(to, 'info'), link)
  return true
}

/**
 * The commit-graph file (or chain) spares Git parsing every commit of a history walk. It names
 * only commits, which Git never deletes while they are reachable, so a linked copy stays true
 * for the staged refs; a graph that vanished meanwhile is skipped (it only makes walks faster).
 */
function linkCommitGraph(from: string, to: string, link: (a: string, b: string) => boolean): void {
  if (existsSync(join(from, 'commit-graph'))) link(join(from, 'commit-graph'), join(to, 'commit-graph'))
  const chain = join(from, 'commit-graphs')
  if (!existsSync(chain)) return
  mkdirSync(join(to, 'commit-graphs'), {recursive: true})
  let files: string[]
  try {
    files = readdirSync(chain)
  } catch {
    return
  }
  // The graph files first, the chain file that names them last.
  let whole = true
  for (const f of files.filter((f) => f.endsWith('.graph'))) whole = link(join(chain, f), join(to, 'commit-graphs', f)) && whole
  if (whole && files.includes('commit-graph-chain')) link(join(chain, 'commit-graph-chain'), join(to, 'commit-graphs', 'commit-graph-chain'))
}
