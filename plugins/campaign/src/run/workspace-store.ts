import {ToolkitError, writeFileAtomicSync} from '@toolkit/kit'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import type {Workspace} from '../types.js'
import {shapeProblem} from './workspace-shape.js'

export const WORKSPACE_FILE = 'workspace.json'

/**
 * workspace.json is replaced, never edited (kit's atomic write: a temporary file and a rename), so
 * a process killed at any instant leaves either the old or the new file. Saves
 * during missions (one per mutating tool call, hundreds on a large catalog) are compact; the run
 * ends with one indented save (`pretty`), so the file a person opens to edit is readable.
 */
export function saveWorkspace(runDir: string, ws: Workspace, pretty = false): void {
  // No fsync per save: a power cut may lose the last saves, which --resume redoes; only a torn
  // file would be a loss, and the rename rules that out.
  writeFileAtomicSync(join(runDir, WORKSPACE_FILE), workspaceText(ws, pretty), {fsync: false})
}

/** The text of workspace.json: compact, or indented for the final save of a run. */
export function workspaceText(ws: Workspace, pretty = false): string {
  return `${pretty ? JSON.stringify(ws, null, 1) : JSON.stringify(ws)}\n`
}

export function loadWorkspace(runDir: string): Workspace {
  const file = join(runDir, WORKSPACE_FILE)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new ToolkitError(
      code === 'ENOENT' ? `${file} not found: is ${runDir} a run directory?` : `cannot read ${file}: ${(error as Error).message}`,
      {code: 'no_workspace', exit: 2},
    )
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new ToolkitError(`${file} is not valid JSON: ${(error as Error).message}`, {code: 'bad_workspace', exit: 2})
  }
  const version = (data as {version?: unknown} | null)?.version
  if (version !== 1) {
    throw new ToolkitError(`${file} has version ${JSON.stringify(version)}; this toolkit reads workspace version 1 only`, {code: 'workspace_version', exit: 2})
  }
  const ws = data as Workspace
  if (!ws.missions || typeof ws.missions !== 'object') throw new ToolkitError(`${file}: missions must be an object`, {code: 'bad_workspace', exit: 2})
  const problem = shapeProblem(ws)
  if (problem) throw new ToolkitError(`${file}: ${problem}`, {code: 'bad_workspace', exit: 2})
  return ws
}
