import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {basename, join, resolve} from 'node:path'

import {copyInputs} from './run/copy-inputs.js'
import {type EventListener, EventLog} from './run/events.js'
import {renderReport} from './run/report.js'
import {createRunDir} from './run/run-dir.js'
import {lockRunDir} from './run/lock.js'
import {EXIT_CODES, type RunJson, totalsOf, writeRunJson} from './run/run-json.js'
import {WorkspaceSaver} from './run/workspace-saver.js'
import {loadWorkspace, saveWorkspace, WORKSPACE_FILE} from './run/workspace-store.js'
import {crossNegatives} from './steps/cross-negatives.js'
import {exportFiles} from './steps/export.js'
import {makePictures, PICTURE_SIZES, planPictures} from './steps/images.js'
import {checkUrls, finalUrls, type UrlResult, urlIssues} from './steps/url-check.js'
import {validateAccount} from './steps/validate.js'
import type {Issue, RunStatus, Totals, Workspace} from './types.js'

// Input parsing, tools and providers pull in zod; `export` needs none of them, so they load
// only on the paths that use them (export of a large workspace is measured in bench/campaign).
export const DEFAULT_PROVIDER = 'local'

export interface RunOptions {
  /** API providers: the endpoint; null for the vendor's default or its variable. */
  baseUrl?: null | string
  maxAttempts?: number
  /** Image provider for the images step: `offline` (default), `openai`, `gemini`; and its model. */
  images?: string
  imagesModel?: null | string
  /** Stop starting model requests once the run's reported cost reaches this many dollars. */
  maxCostUsd?: null | number
  maxTurns?: number
  model?: null | string
  parallel?: number
  provider?: string
  signal?: AbortSignal
  skipUrlCheck?: boolean
  urlConcurrency?: number
  urlTimeoutMs?: number
}

export interface GenerateOptions extends RunOptions {
  businessFile: string
  out: string
}

export interface RunOutcome {
  exitCode: number
  files: string[]
  issues: Issue[]
  runDir: string
  runId: string
  status: RunStatus
  totals: Totals
}

/** `generate`: read the inputs, make a run directory, run every mission, then the steps. */
export async function generate(opts: GenerateOptions, listeners: EventListener[] = []): Promise<RunOutcome> {
  const {readInputs} = await import('./input/inputs.js')
  const {createProvider} = await import('./providers/index.js')
  const inputs = await readInputs(opts.businessFile)
  const {parsed} = inputs
  const provider = createProvider(opts.provider ?? DEFAULT_PROVIDER, {baseUrl: opts.baseUrl ?? null, maxTurns: opts.maxTurns ?? 200, model: opts.model ?? null})
  const {imageGenerator} = await import('./providers/images/index.js')
  imageGenerator(imageOptions(opts))

  const {runDir, runId} = createRunDir(resolve(opts.out))
  const release = lockRunDir(runDir, 'generate')
  const {catalog, logo} = copyInputs(runDir, inputs)
  const ws: Workspace = {
    account: {brand_kit: null, campaigns: []},
    input: {
      budget: parsed.budget,
      business: parsed.business,
      catalog,
      catalog_file: parsed.catalogFile,
      colors: parsed.brand.colors,
      export: parsed.export,
      formats: parsed.formats,
      search_bid_strategy: parsed.searchBidStrategy,
      logo,
    },
    missions: {plan: {attempts: 0, status: 'pending', usage: {cost_usd: null, input_tokens: 0, output_tokens: 0}}},
    version: 1,
  }
  try {
    saveWorkspace(runDir, ws)
    return await execute({entry: 'missions', model: provider.model, opts, providerName: provider.name, runDir, runId, ws}, listeners)
  } finally {
    release()
  }
}

/** `--resume <run-dir>`: run the missions that did not finish, then the steps. */
export async function resume(runDir: string, opts: RunOptions, listeners: EventListener[] = []): Promise<RunOutcome> {
  return locked(runDir, 'generate --resume', () => resumeLocked(runDir, opts, listeners))
}

async function resumeLocked(runDir: string, opts: RunOptions, listeners: EventListener[]): Promise<RunOutcome> {
  const ws = loadWorkspace(runDir)
  const previous = readRunJson(runDir)
  for (const m of Object.values(ws.missions)) if (m.status !== 'finished') m.status = 'pending'
  const providerName = opts.provider ?? previous?.provider ?? DEFAULT_PROVIDER
  // The endpoint the run talked to, unless --base-url says otherwise or the provider changes.
  const baseUrl = opts.baseUrl ?? (providerName === previous?.provider ? previous?.base_url : null) ?? null
  return execute({entry: 'missions', model: opts.model ?? previous?.model ?? null, opts: {...opts, baseUrl, provider: providerName}, providerName, runDir, runId: basename(resolve(runDir)), ws}, listeners)
}

/** `export <run-dir>`: the steps only, from workspace.json, without a model. */
export async function exportRun(runDir: string, opts: RunOptions, listeners: EventListener[] = []): Promise<RunOutcome> {
  return locked(runDir, 'export', () => exportLocked(runDir, opts, listeners))
}

async function exportLocked(runDir: string, opts: RunOptions, listeners: EventListener[]): Promise<RunOutcome> {
  const ws = loadWorkspace(runDir)
  const previous = readRunJson(runDir)
  return execute({entry: 'steps', model: previous?.model ?? null, opts: {...opts, baseUrl: previous?.base_url ?? null}, providerName: previous?.provider ?? DEFAULT_PROVIDER, runDir, runId: basename(resolve(runDir)), ws}, listeners)
}

function imageOptions(opts: RunOptions) {
  // The image endpoint is the vendor's own (or its variable): --base-url belongs to the text provider.
  return {baseUrl: null, model: opts.imagesModel ?? null, name: opts.images ?? 'offline'}
}

/** Runs `work` holding the run directory's lock; a directory that is not a run is left alone. */
async function locked<T>(runDir: string, command: string, work: () => Promise<T>): Promise<T> {
  // Not a run directory: the loader's message says so, before any lock file is made there.
  if (!existsSync(join(runDir, WORKSPACE_FILE))) loadWorkspace(runDir)
  const release = lockRunDir(runDir, command)
  try {
    return await work()
  } finally {
    release()
  }
}

/** A base URL as run.json may keep it: never one that carries a user name or password. */
function recordedUrl(url: null | string): null | string {
  if (!url) return null
  try {
    const u = new URL(url)
    return u.username === '' && u.password === '' ? url : null
  } catch {
    return null
  }
}

function readRunJson(runDir: string): null | RunJson {
  try {
    return JSON.parse(readFileSync(join(runDir, 'run.json'), 'utf8')) as RunJson
  } catch {
    return null
  }
}

interface Execution {
  entry: 'missions' | 'steps'
  model: null | string
  opts: RunOptions
  providerName: string
  runDir: string
  runId: string
  ws: Workspace
}

async function execute(x: Execution, listeners: EventListener[]): Promise<RunOutcome> {
  const {runDir, ws} = x
  const events = new EventLog(join(runDir, 'events.ndjson'), listeners)
  const save = () => saveWorkspace(runDir, ws)
  // Set when the steps changed the workspace, or the missions saved it compactly: one indented save at the end.
  let dirty = x.entry === 'missions'
  const signal = x.opts.signal ?? new AbortController().signal
  try {
    // A provider that cannot run (no key, no CLI) stops a resume before anything is written.
    const provider = x.entry === 'missions' ? (await import('./providers/index.js')).createProvider(x.providerName, {baseUrl: x.opts.baseUrl ?? null, maxTurns: x.opts.maxTurns ?? 200, model: x.model}) : null
    const base_url = recordedUrl(provider ? (provider.baseUrl ?? null) : (x.opts.baseUrl ?? null))
    events.emit({model: x.model, provider: x.providerName, run_dir: runDir, run_id: x.runId, type: 'run_started'})
    // A run killed before its end still leaves a run.json that says it is not done.
    writeRunJson(runDir, {base_url, exit_code: 1, model: x.model, provider: x.providerName, run_id: x.runId, status: 'incomplete', totals: totalsOf(ws), version: 1})
    if (provider) {
      const {runMissions} = await import('./missions/scheduler.js')
      save()
      // While missions run, saves go through the grouped, asynchronous saver; the steps after
      // them save synchronously again, once it has nothing left to write.
      const saver = new WorkspaceSaver(runDir, ws)
      try {
        await runMissions({events, maxAttempts: x.opts.maxAttempts ?? 2, maxCostUsd: x.opts.maxCostUsd ?? null, maxTurns: x.opts.maxTurns ?? 200, parallel: x.opts.parallel ?? 4, provider, runDir, save: () => saver.save(), signal, ws})
      } finally {
        await saver.idle()
      }
    }
    const complete = Object.values(ws.missions).every((m) => m.status === 'finished')

    const negativesBefore = JSON.stringify(ws.account.campaigns.map((c) => c.negatives))
    const cross = crossNegatives(ws)
    if (JSON.stringify(ws.account.campaigns.map((c) => c.negatives)) !== negativesBefore) dirty = true
    events.emit({detail: cross, name: 'cross-negatives', type: 'step'})

    const plans = planPictures(ws)
    events.emit({detail: {pictures: plans.length, sizes: Object.fromEntries(Object.entries(PICTURE_SIZES).map(([k, v]) => [k, `${v.width}x${v.height}`])), planned: plans.map((p) => p.path)}, name: 'images', type: 'step'})
    const makeGenerator = plans.length > 0 ? (await import('./providers/images/index.js')).imageGenerator(imageOptions(x.opts)) : null
    const generator = makeGenerator ? await makeGenerator() : undefined
    const pictures = await makePictures(
      ws,
      runDir,
      plans,
      (path, reason) => events.emit({detail: {failed: path, reason}, name: 'images', type: 'step'}),
      (path, reason) => events.emit({detail: {reason, regenerated: path}, name: 'images', type: 'step'}),
      generator,
    )
    // Only image campaigns' picture records can have changed.
    if (ws.account.campaigns.some((c) => c.type !== 'search')) dirty = true
    // Only files this step wrote: pictures reused unchanged were announced by the run that made them.
    for (const path of pictures.written) events.emit({path, type: 'artifact_written'})

    const issues = validateAccount(ws, runDir)
    const errors = issues.filter((i) => i.severity === 'error')
    const warnings = issues.filter((i) => i.severity === 'warning')
    events.emit({detail: {errors: errors.length, warnings: warnings.length}, name: 'validate', type: 'step'})
    events.emit({errors, type: 'validation', warnings})

    let urls: null | UrlResult[] = null
    if (x.opts.skipUrlCheck) events.emit({detail: {skipped: true}, name: 'url-check', type: 'step'})
    else {
      const list = finalUrls(ws)
      events.emit({detail: {urls: list.length}, name: 'url-check', type: 'step'})
      urls = await checkUrls(list, {concurrency: x.opts.urlConcurrency ?? 16, onResult: (r) => events.emit({ok: r.ok, status: r.status, type: 'url_checked', url: r.url}), timeoutMs: x.opts.urlTimeoutMs ?? 10_000})
      issues.push(...urlIssues(urls))
    }

    const status: RunStatus = !complete ? 'incomplete' : issues.some((i) => i.severity === 'error') ? 'invalid' : 'success'
    const exitCode = EXIT_CODES[status]
    const files = exportFiles(ws, runDir, status === 'success')
    events.emit({detail: status === 'success' ? {written: files} : {skipped: `the run is ${status}`, written: []}, name: 'export', type: 'step'})
    for (const f of files) events.emit({path: f, type: 'artifact_written'})

    // Cross-negatives and picture records are rebuilt by every run, so saving them once here
    // loses nothing a crash before it could not rebuild.
    if (dirty) saveWorkspace(runDir, ws, true)
    const totals = totalsOf(ws)
    writeRunJson(runDir, {base_url, exit_code: exitCode, model: x.model, provider: x.providerName, run_id: x.runId, status, totals, version: 1})
    const report = {exitCode, files, issues, model: x.model, provider: x.providerName, runId: x.runId, status, totals, urls, ws}
    writeFileSync(join(runDir, 'report.md'), renderReport(report))
    events.emit({path: 'report.md', type: 'artifact_written'})
    const {writeReportHtml} = await import('./report-html/write.js')
    events.emit({path: await writeReportHtml(runDir, report), type: 'artifact_written'})
    events.emit({exit_code: exitCode, ok: status === 'success', totals, type: 'run_finished'})
    return {exitCode, files, issues, runDir, runId: x.runId, status, totals}
  } finally {
    events.close()
  }
}
