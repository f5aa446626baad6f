import {EngineError} from '../engine/errors.js'
import {git} from '../engine/git.js'
import {requireDataDir} from './data-dir.js'

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

export interface RemoteInfo {
  name: string
  url: string
}

/**
 * Replication targets are plain Git remotes of the data directory's repository (so `git -C
 * data/repo remote -v` shows them and diagnose reports their sync state); a running server
 * pushes every branch to each of them after commits.
 */
export async function addRemote(o: {dataDir: string; name: string; url: string}): Promise<RemoteInfo> {
  const {repo} = requireDataDir(o.dataDir)
  if (!NAME.test(o.name)) throw new EngineError('invalid_argument', `invalid remote name ${JSON.stringify(o.name)}: use letters, digits, _ . - (at most 64)`)
  if (typeof o.url !== 'string' || o.url.trim() === '' || o.url.startsWith('-')) throw new EngineError('invalid_argument', `invalid remote URL ${JSON.stringify(o.url)}`)
  if ((await listRemotes({dataDir: o.dataDir})).some((r) => r.name === o.name)) throw new EngineError('conflict', `remote ${o.name} already exists; remove it first (toolkit svc remote remove --name ${o.name})`)
  await git(repo, ['remote', 'add', o.name, o.url])
  return {name: o.name, url: o.url}
}

export async function listRemotes(o: {dataDir: string}): Promise<RemoteInfo[]> {
  const {repo} = requireDataDir(o.dataDir)
  const {stdout} = await git(repo, ['config', '--get-regexp', '^remote\\..*\\.url$']).catch(() => ({stdout: ''}))
  return stdout.split('\n').filter(Boolean).map((l) => {
    const [key, ...url] = l.split(' ')
    return {name: key.slice('remote.'.length, -'.url'.length), url: url.join(' ')}
  })
}

export async function removeRemote(o: {dataDir: string; name: string}): Promise<RemoteInfo> {
  const {repo} = requireDataDir(o.dataDir)
  const found = (await listRemotes(o)).find((r) => r.name === o.name)
  if (!found) throw new EngineError('not_found', `no remote named ${o.name}`)
  await git(repo, ['remote', 'remove', o.name])
  return found
}

/**
 * Makes the config's `:remotes` Git remotes of the repository (added, or their URL updated);
 * remotes added with `toolkit svc remote add` stay. Called by the server at start.
 */
export async function applyConfigRemotes(dataDir: string, remotes: Record<string, string>): Promise<RemoteInfo[]> {
  const {repo} = requireDataDir(dataDir)
  const current = await listRemotes({dataDir})
  const applied: RemoteInfo[] = []
  for (const [name, url] of Object.entries(remotes)) {
    if (!NAME.test(name)) throw new EngineError('invalid_argument', `config :remotes: invalid remote name ${JSON.stringify(name)}: use letters, digits, _ . - (at most 64)`)
    if (url.startsWith('-')) throw new EngineError('invalid_argument', `config :remotes :${name}: invalid URL ${JSON.stringify(url)}`)
    const had = current.find((r) => r.name === name)
    if (!had) await git(repo, ['remote', 'add', name, url])
    else if (had.url !== url) await git(repo, ['remote', 'set-url', name, url])
    applied.push({name, url})
  }
  return applied
}
