import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

const made: string[] = []

// Removed when the test process exits rather than per test: a directory may be a HOME that a
// spawned CLI still reads while a later `it` in the same file runs.
process.on('exit', () => {
  for (const d of made.splice(0)) rmSync(d, {force: true, recursive: true})
})

/** A scratch directory under the OS temp folder, removed when the test run ends. */
export function scratchDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix))
  made.push(d)
  return d
}
