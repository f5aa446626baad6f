import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import type {IndexDefinition} from '../engine/field-index.js'
import {git} from '../engine/git.js'
import {LAYOUT_NAMES} from '../engine/layout.js'

/**
 * Secondary index definitions live in the data directory's `indexes.json`, outside Git, so a
 * follower would never see them. The leader publishes the file as a commit on this ref (pushed
 * with the branches); a follower fetches it and builds the same indexes from what it pulls.
 */
export const DEFINITIONS_REF = 'refs/svc/index-definitions'

/** `branch -> definitions` as the engine saved them; empty when none were ever made. */
function readDefinitionsFile(dataDir: string): string {
  try {
    return readFileSync(join(dataDir, LAYOUT_NAMES.indexDefinitions), 'utf8')
  } catch {
    return `${JSON.stringify({branches: {}, format: 1}, null, 2)}\n`
  }
}

/**
 * Points DEFINITIONS_REF at a commit holding the current `indexes.json` when the file changed
 * since `last` (what this process last published); returns the published text.
 */
export async function publishDefinitions(dataDir: string, repo: string, last: string | undefined): Promise<string> {
  const text = readDefinitionsFile(dataDir)
  if (text === last) return text
  const current = await definitionsAt(repo, DEFINITIONS_REF)
  if (current === text) return text
  const blob = (await git(repo, ['hash-object', '-w', '--stdin'], {input: text})).stdout.trim()
  const tree = (await git(repo, ['mktree'], {input: `100644 blob ${blob}\tindexes.json\n`})).stdout.trim()
  const parent = (await git(repo, ['rev-parse', '--verify', '--quiet', DEFINITIONS_REF]).catch(() => ({stdout: ''}))).stdout.trim()
  const commit = (await git(repo, ['-c', 'user.name=svc', '-c', 'user.email=svc@localhost', 'commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', 'svc: secondary index definitions'])).stdout.trim()
  await git(repo, ['update-ref', DEFINITIONS_REF, commit])
  return text
}

/** The `indexes.json` text on `ref`, or undefined when the ref does not exist. */
export async function definitionsAt(repo: string, ref: string): Promise<string | undefined> {
  try {
    return (await git(repo, ['cat-file', 'blob', `${ref}:indexes.json`])).stdout
  } catch {
    return undefined
  }
}

export function parseDefinitions(text: string): Record<string, IndexDefinition[]> {
  try {
    const parsed = JSON.parse(text) as {branches?: Record<string, IndexDefinition[]>}
    return parsed.branches && typeof parsed.branches === 'object' ? parsed.branches : {}
  } catch {
    return {}
  }
}
