import {execFileSync} from 'node:child_process'
import {mkdtempSync, readdirSync, readFileSync, renameSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {createLogger} from '../../src/engine/logger.js'
import type {Logger} from '../../src/engine/types.js'

const made: string[] = []
// Files that never call cleanupTempDirs (the e2e ones among them) still leave nothing behind.
process.on('exit', () => cleanupTempDirs())

export function tempDir(prefix = 'svc-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix))
  made.push(d)
  return d
}

/**
 * Retried, and never failing a test: a server killed with SIGKILL leaves its git children
 * (fast-import, a commit-graph write) finishing on their own, and they may still be adding files.
 */
export function cleanupTempDirs(): void {
  for (const d of made.splice(0)) {
    try {
      rmSync(d, {force: true, maxRetries: 10, recursive: true, retryDelay: 100})
    } catch (error) {
      // Removing scratch space is not what any test checks: say so and leave it to the OS.
      process.stderr.write(`(left ${d} behind: ${(error as Error).message})\n`)
    }
  }
}

export function gitOut(repo: string, args: string[]): string {
  return execFileSync('git', ['-C', repo, ...args], {encoding: 'utf8'})
}

/** A logger that keeps its lines, to assert on what an operator would read. */
export function memoryLogger(): {lines: string[]; logger: Logger} {
  const lines: string[] = []
  return {lines, logger: createLogger({format: 'json', level: 'debug', write: (l) => lines.push(l)})}
}

/** Unpacks every object of a stopped repository, then deletes one (as a disk error or a bad copy would). */
export function loseObject(repo: string, sha: string): void {
  const packDir = join(repo, 'objects', 'pack')
  for (const f of readdirSync(packDir).filter((x) => x.endsWith('.pack'))) {
    const moved = join(tempDir(), f)
    renameSync(join(packDir, f), moved)
    execFileSync('git', ['-C', repo, 'unpack-objects', '-q'], {input: readFileSync(moved)})
  }
  for (const f of readdirSync(packDir)) rmSync(join(packDir, f), {force: true})
  rmSync(join(repo, 'objects', sha.slice(0, 2), sha.slice(2)))
}
