import {type Output, ToolkitError} from '@toolkit/kit'

import * as pipeline from './pipeline.js'
import type {EventLine, EventListener} from './run/events.js'

type Pipeline = typeof pipeline
type Common = pipeline.RunOptions & {listeners: EventListener[]}

/**
 * What generate, --resume and export share on the command line: events to stdout with
 * --format json, progress on stderr otherwise, Ctrl-C turned into an orderly "incomplete" run,
 * a summary, and the exit code of the run's status (thrown after every file is written).
 */
export async function runCommand(out: Output, start: (p: Pipeline, opts: Common) => Promise<pipeline.RunOutcome>, options: pipeline.RunOptions): Promise<void> {
  const controller = new AbortController()
  const onSigint = () => controller.abort()
  process.once('SIGINT', onSigint)
  const spinner = out.format === 'text' ? out.spinner('starting') : null
  // A reader that goes away (`| head`) must not kill the run half-way: the run directory is the
  // product, stdout only a view of it. Stop writing records and let the run finish.
  let reader = true
  const onStdoutError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error
    reader = false
  }
  process.stdout.on('error', onStdoutError)
  const listener: EventListener =
    out.format === 'json' ? (line) => reader && out.record(line as unknown as Record<string, unknown>) : (line) => progress(out, line, spinner)
  let outcome: pipeline.RunOutcome
  try {
    outcome = await start(pipeline, {...options, listeners: [listener], signal: controller.signal})
  } catch (error) {
    spinner?.fail()
    throw error
  } finally {
    process.removeListener('SIGINT', onSigint)
  }
  if (!reader) {
    // The host's final stdout flush waits for a 'drain' a closed pipe never sends; with the exit
    // code already set, Node ends with it instead of 13 (unsettled top-level await).
    process.exitCode = outcome.exitCode
    return finish(outcome)
  }
  if (outcome.status === 'success') spinner?.succeed(`run ${outcome.runId} finished`)
  else spinner?.fail(`run ${outcome.runId} is ${outcome.status}`)
  if (out.format === 'text') out.record({}, summary(out, outcome))
  finish(outcome)
}

/** The exit code of the run's status, thrown once every file is written. */
function finish(outcome: pipeline.RunOutcome): void {
  if (outcome.exitCode !== 0) {
    const errors = outcome.issues.filter((i) => i.severity === 'error').length
    const why = outcome.status === 'invalid' ? `${errors} validation errors` : `${outcome.totals.failed_missions} of ${outcome.totals.missions} missions did not finish`
    throw new ToolkitError(`run ${outcome.status}: ${why}; see ${outcome.runDir}/report.md`, {code: outcome.status, exit: outcome.exitCode})
  }
}

function progress(out: Output, line: EventLine, spinner: null | {update(t: string): void}): void {
  const e = line.event
  switch (e.type) {
    case 'mission_started': {
      spinner?.update(`${e.mission} (attempt ${e.attempt})`)
      break
    }
    case 'tool_called': {
      spinner?.update(`${e.mission}: ${e.tool} ${e.summary}`)
      break
    }
    case 'mission_finished': {
      out.log(`${e.ok ? out.color.green('✓') : out.color.red('✗')} ${e.mission}${e.reason ? `: ${e.reason}` : ''}`)
      break
    }
    case 'step': {
      spinner?.update(`step ${e.name}`)
      break
    }
    case 'url_checked': {
      if (!e.ok) out.log(`${out.color.red('✗')} ${e.url} ${e.status ?? 'unreachable'}`)
      break
    }
    default:
  }
}

function summary(out: Output, o: pipeline.RunOutcome): string {
  const c = out.color
  const errors = o.issues.filter((i) => i.severity === 'error')
  const warnings = o.issues.filter((i) => i.severity === 'warning')
  const head = o.status === 'success' ? c.green('success') : o.status === 'invalid' ? c.red('invalid') : c.yellow('incomplete')
  const lines = [`Run ${o.runId}: ${head} (exit ${o.exitCode})`, `  directory  ${o.runDir}`, `  missions   ${o.totals.missions - o.totals.failed_missions}/${o.totals.missions} finished`, `  issues     ${errors.length} errors, ${warnings.length} warnings`]
  for (const i of errors.slice(0, 10)) lines.push(`    ${c.red(i.code)} ${i.path}: ${i.message}`)
  if (errors.length > 10) lines.push(`    ... ${errors.length - 10} more in report.md`)
  if (o.files.length > 0) lines.push(`  files      ${o.files.join(', ')}`)
  lines.push(`  report     ${o.runDir}/report.md`)
  return lines.join('\n')
}
