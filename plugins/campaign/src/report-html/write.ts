import {writeFileAtomic} from '@toolkit/kit'
import {join} from 'node:path'

import type {ReportInput} from '../run/report.js'
import {pictureDataUrls} from './pictures.js'
import {picturePaths, renderReportHtml} from './render.js'

export const REPORT_HTML = 'report.html'

/** Writes report.html beside report.md, replacing the old one whole. */
export async function writeReportHtml(runDir: string, input: ReportInput): Promise<string> {
  const pictures = await pictureDataUrls(runDir, picturePaths(input))
  await writeFileAtomic(join(runDir, REPORT_HTML), renderReportHtml(input, pictures), {fsync: false})
  return REPORT_HTML
}
