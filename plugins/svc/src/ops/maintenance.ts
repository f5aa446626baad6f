import {EngineError} from '../engine/errors.js'
import {compact} from './compact.js'
import {removeBranch} from './remove-branch.js'

/** `toolkit svc server --command compact | remove-branch --name B`: the spec's process-option forms. */
export async function runMaintenance(command: 'compact' | 'remove-branch', o: {dataDir: string; name?: string}): Promise<{record: Record<string, unknown>; text: string}> {
  if (command === 'compact') {
    const r = await compact({dataDir: o.dataDir})
    return {record: {...r}, text: `compacted ${r.dataDir} (${r.mode}): ${r.bytesBefore} -> ${r.bytesAfter} bytes of objects`}
  }
  if (o.name === undefined) throw new EngineError('invalid_argument', '--command remove-branch needs --name <branch>')
  const r = await removeBranch({dataDir: o.dataDir, name: o.name})
  return {record: {...r}, text: `branch ${r.name} removed from ${r.dataDir}`}
}
