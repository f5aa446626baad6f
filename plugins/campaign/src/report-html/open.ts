import {spawn} from 'node:child_process'
import {existsSync, readdirSync, statSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {pathToFileURL} from 'node:url'

import {ToolkitError, UsageError} from '@toolkit/kit'

import {REPORT_HTML} from './write.js'

export interface OpenOutcome {
  /** What showed the page: `$BROWSER`'s command, or "system" for the desktop's default browser; null when nothing did. */
  browser: null | string
  opened: boolean
  path: string
  /** Why the page was not opened; null when it was. */
  reason: null | string
  url: string
}

/**
 * The run directory to open: the one given, else the newest run under `out` (the runs
 * generate writes are named by their UTC start time, so the newest sorts last).
 */
export function reportRunDir(given: string | undefined, out: string): string {
  if (given !== undefined) {
    const dir = resolve(given)
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`${given} is not a directory; give a run directory written by \`toolkit campaign generate\``)
    return dir
  }
  const root = resolve(out)
  const runs = existsSync(root)
    ? readdirSync(root)
        .filter((d) => /^\d{8}-\d{6}-[0-9a-f]{6}$/.test(d) && existsSync(join(root, d, 'run.json')))
        .sort()
    : []
  if (runs.length === 0) throw new UsageError(`no run directory in ${root}; give one (\`toolkit campaign open out/<run>\`) or run \`toolkit campaign generate\` first`)
  return join(root, runs.at(-1) as string)
}

/** The report's path and file: URL; a run from before report.html existed is told how to get one. */
export function reportFile(runDir: string): {path: string; url: string} {
  const path = join(runDir, REPORT_HTML)
  if (!existsSync(path)) {
    const isRun = existsSync(join(runDir, 'workspace.json'))
    throw new ToolkitError(
      isRun ? `${runDir} has no ${REPORT_HTML}; write it with \`toolkit campaign export ${runDir} --skip-url-check\`` : `${runDir} is not a run directory (no workspace.json); give one written by \`toolkit campaign generate\``,
      {code: 'report_missing', exit: 2},
    )
  }
  return {path, url: pathToFileURL(path).href}
}

/**
 * `$BROWSER` as the convention has it: a list separated by ":" whose first entry is used, a
 * command with arguments in which `%s` stands for the URL (appended when absent).
 */
export function browserCommand(value: string, url: string): null | string[] {
  const entry = value.split(':').find((e) => e.trim() !== '')
  if (!entry) return null
  const words = entry.trim().split(/\s+/)
  return words.some((w) => w.includes('%s')) ? words.map((w) => w.replaceAll('%s', url)) : [...words, url]
}

/** Resolves once the program started (true) or could not start (false); the browser is left running on its own. */
function launch(argv: string[]): Promise<{error: null | string; ok: boolean}> {
  return new Promise((done) => {
    const child = spawn(argv[0], argv.slice(1), {detached: true, stdio: 'ignore'})
    child.once('error', (e: NodeJS.ErrnoException) => done({error: e.code ?? e.message, ok: false}))
    child.once('spawn', () => {
      child.unref()
      done({error: null, ok: true})
    })
  })
}

/** Opens the report in the user's browser: `$BROWSER` first, else the desktop's default when there is a display. */
export async function openReport(runDir: string, env: Record<string, string | undefined> = process.env): Promise<OpenOutcome> {
  const {path, url} = reportFile(runDir)
  const browser = env.BROWSER ? browserCommand(env.BROWSER, url) : null
  if (browser) {
    const started = await launch(browser)
    return started.ok ? {browser: browser[0], opened: true, path, reason: null, url} : {browser: null, opened: false, path, reason: `$BROWSER (${browser[0]}) could not start: ${started.error}`, url}
  }
  const hasDisplay = process.platform === 'darwin' || process.platform === 'win32' || Boolean(env.DISPLAY || env.WAYLAND_DISPLAY)
  if (!hasDisplay) return {browser: null, opened: false, path, reason: 'no display and no $BROWSER set', url}
  try {
    const {default: open} = await import('open')
    const child = await open(url)
    child.on('error', () => {})
    child.unref()
    return {browser: 'system', opened: true, path, reason: null, url}
  } catch (error) {
    return {browser: null, opened: false, path, reason: `the desktop's browser could not start: ${(error as Error).message}`, url}
  }
}
