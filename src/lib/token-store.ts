import type {ClientEntry, TokenEntry, TokenFile, TokenStore} from '@toolkit/kit'

import {ToolkitError} from '@toolkit/kit/errors'
import lockfile from 'proper-lockfile'
import writeFileAtomic from 'write-file-atomic'
import {createHash} from 'node:crypto'
import {mkdirSync, readFileSync} from 'node:fs'
import {dirname} from 'node:path'

const empty = (): TokenFile => ({clients: {}, tokens: {}})

function readStore(file: string): TokenFile {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return empty()
    throw error
  }
  if (text.trim() === '') return empty()
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new ToolkitError(`token store ${file} is not valid JSON (${(error as Error).message}); delete it to log in again`, {code: 'token_store_corrupt'})
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ToolkitError(`token store ${file} must hold a JSON object; delete it to log in again`, {code: 'token_store_corrupt'})
  }
  const store = data as Partial<TokenFile>
  return {...store, clients: store.clients ?? {}, tokens: store.tokens ?? {}}
}

/**
 * Credentials keyed by server URL in one JSON file. Every change is a locked read-modify-write,
 * so two processes saving tokens at once both land; the file is replaced atomically (write a
 * temporary file, fsync, rename) with mode 0600, so a crash never leaves half a file.
 */
export function createTokenStore(file: string): TokenStore {
  const update = async (mutate: (data: TokenFile) => Promise<void> | void): Promise<TokenFile> => {
    mkdirSync(dirname(file), {mode: 0o700, recursive: true})
    const release = await lockfile.lock(file, {
      realpath: false,
      retries: {factor: 1.5, maxTimeout: 200, minTimeout: 10, retries: 60},
      stale: 10_000,
    })
    try {
      const data = readStore(file)
      await mutate(data)
      await writeFileAtomic(file, `${JSON.stringify(data, null, 2)}\n`, {fsync: true, mode: 0o600})
      return data
    } finally {
      await release()
    }
  }

  // In-process holders queue here, so one process never races itself for its own lock directory.
  const local = new Map<string, Promise<unknown>>()
  const exclusive = async <T>(url: string, work: () => Promise<T>): Promise<T> => {
    const previous = local.get(url) ?? Promise.resolve()
    const run = previous.catch(() => {}).then(async () => {
      mkdirSync(dirname(file), {mode: 0o700, recursive: true})
      // One lock per entry (named by a digest: the URL may hold a secret), apart from the file's
      // own lock so `work` can still save. While held, proper-lockfile refreshes its mtime, so
      // only a holder that died is declared stale; waiting is bounded to about 30 s.
      const entry = createHash('sha256').update(url).digest('hex').slice(0, 16)
      let release: () => Promise<void>
      try {
        // proper-lockfile tracks its locks by the path given, so the entry gets a path of its own.
        release = await lockfile.lock(`${file}.${entry}`, {
          onCompromised: () => {},
          realpath: false,
          retries: {factor: 1.3, maxTimeout: 250, minTimeout: 20, retries: 150},
          stale: 10_000,
        })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error
        throw new ToolkitError(`another process has held the token store entry of this server for too long (${file}); try again`, {code: 'token_store_busy'})
      }
      try {
        return await work()
      } finally {
        await release().catch(() => {})
      }
    })
    local.set(url, run)
    try {
      return await run
    } finally {
      if (local.get(url) === run) local.delete(url)
    }
  }

  return {
    exclusive,
    file,
    async get(url) {
      const data = readStore(file)
      return {client: data.clients[url], token: data.tokens[url]}
    },
    async read() {
      return readStore(file)
    },
    async remove(url, what = 'all') {
      await update((data) => {
        if (what !== 'token') delete data.clients[url]
        if (what !== 'client') delete data.tokens[url]
      })
    },
    async setClient(url: string, client: ClientEntry) {
      await update((data) => {
        data.clients[url] = client
      })
    },
    async setToken(url: string, token: TokenEntry) {
      await update((data) => {
        data.tokens[url] = token
      })
    },
    update,
  }
}
