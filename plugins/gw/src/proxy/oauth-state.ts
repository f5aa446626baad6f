import {InputError, writeFileAtomic} from '@toolkit/kit'
import {mkdir, readFile} from 'node:fs/promises'
import {dirname} from 'node:path'

export interface PersistedState {
  clients: Record<string, unknown>
  /** Refresh-token grants by SHA-256 of the token: the file never holds a usable refresh token. */
  refresh: Record<string, unknown>
  /** Per client id: when and from where it registered, and whether it was ever used (registrations.ts). */
  registrations?: Record<string, unknown>
  rotated: Record<string, unknown>
}

/** Reads the state file; missing means empty. A file that does not parse stops the start rather than be overwritten. */
export async function loadState(file: string): Promise<PersistedState> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {clients: {}, refresh: {}, rotated: {}}
    throw new InputError(`cannot read the oauth_as state file (${(error as Error).message})`, {code: 'state_unreadable', file})
  }
  try {
    const data = JSON.parse(text) as Partial<PersistedState>
    if (typeof data !== 'object' || data === null) throw new Error('not an object')
    return {clients: data.clients ?? {}, refresh: data.refresh ?? {}, registrations: data.registrations ?? {}, rotated: data.rotated ?? {}}
  } catch (error) {
    throw new InputError(`the oauth_as state file is not valid JSON (${(error as Error).message}); fix it, or delete it to make clients register again`, {
      code: 'state_invalid',
      file,
    })
  }
}

/**
 * Writes of the state file, coalesced (many changes in one tick make one write) and serialized,
 * each to a temporary file with mode 0600 then renamed over the old one, so a crash never leaves
 * a half-written file.
 */
export function stateWriter(file: string, snapshot: () => PersistedState, log?: (m: string) => void): {flush(): Promise<void>; schedule(): void} {
  let chain: Promise<void> = Promise.resolve()
  let pending = false
  const write = async () => {
    pending = false
    await mkdir(dirname(file), {mode: 0o700, recursive: true})
    await writeFileAtomic(file, `${JSON.stringify(snapshot())}\n`, {mode: 0o600})
  }
  return {
    flush: () => chain,
    schedule() {
      if (pending) return
      pending = true
      chain = chain.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(write).catch((error) => {
        log?.(`could not save the oauth_as state to ${file}: ${(error as Error).message}`)
      })
    },
  }
}
