import type {Client} from '@modelcontextprotocol/sdk/client/index.js'

import {UsageError} from '@toolkit/kit'

/** A server that did not declare `resources` or `prompts` is told so, instead of a bare "method not found". */
export function requireCapability(client: Client, server: string, capability: 'prompts' | 'resources'): void {
  if (!client.getServerCapabilities()?.[capability]) {
    throw new UsageError(`server "${server}" offers no ${capability} (its initialize answer does not declare them)`, `no_${capability}`)
  }
}

/** Every page of a cursor-paged list (bounded, in case a server loops). */
export async function allPages<T>(page: (cursor: string | undefined) => Promise<{items: T[]; nextCursor?: string}>): Promise<T[]> {
  const out: T[] = []
  let cursor: string | undefined
  for (let i = 0; i < 100; i++) {
    const r = await page(cursor)
    out.push(...r.items)
    cursor = r.nextCursor
    if (!cursor) break
  }
  return out
}
