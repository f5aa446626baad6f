import {writeFileAtomicSync} from '@toolkit/kit'
import {existsSync, mkdirSync, rmSync} from 'node:fs'
import {join} from 'node:path'

import {delimited, utf16le} from '../export/google-ads/delimited.js'
import {editorRows, imageCampaigns} from '../export/google-ads/editor-file.js'
import {SEARCH_FILES, searchRows} from '../export/google-ads/search-csv.js'
import type {Workspace} from '../types.js'

export const PLATFORM_DIR = 'google-ads'
export const EDITOR_FILE = join('editor', 'image-campaigns.csv')

/**
 * Writes the import files of a successful run: the five bulk-upload CSVs when the account has
 * Search campaigns, and the Editor file when it has image campaigns. Files a previous export
 * left that no longer apply are removed, so the folder always matches the workspace. When the
 * run is not a success no CSV stays (pictures do: resume and export reuse them).
 */
export function exportFiles(ws: Workspace, runDir: string, write: boolean): string[] {
  const dir = join(runDir, PLATFORM_DIR)
  const hasSearch = ws.account.campaigns.some((c) => c.type === 'search')
  const hasImage = imageCampaigns(ws).length > 0
  const written: string[] = []
  if (write && hasSearch) {
    mkdirSync(dir, {recursive: true})
    const rows = searchRows(ws)
    for (const f of SEARCH_FILES) {
      writeFileAtomicSync(join(dir, f), delimited(rows[f], ','), {fsync: false})
      written.push(join(PLATFORM_DIR, f))
    }
  } else {
    for (const f of SEARCH_FILES) rmSync(join(dir, f), {force: true})
  }
  if (write && hasImage) {
    mkdirSync(join(dir, 'editor'), {recursive: true})
    writeFileAtomicSync(join(dir, EDITOR_FILE), utf16le(delimited(editorRows(ws), '\t')), {fsync: false})
    written.push(join(PLATFORM_DIR, EDITOR_FILE))
  } else {
    rmSync(join(dir, EDITOR_FILE), {force: true})
    if (!hasImage) rmSync(join(dir, 'editor'), {force: true, recursive: true})
  }
  if (existsSync(dir) && !hasSearch && !hasImage) rmSync(dir, {force: true, recursive: true})
  return written
}
