import {startAnthropic} from '../fakes/anthropic.js'
import {startOpenAI} from '../fakes/openai.js'
import type {Fake} from '../fakes/server.js'
import {startCodexDialect} from './codex-dialect.js'

export const CSVS = ['1-campaign.csv', '2-ad-groups.csv', '3-keywords.csv', '4-negative-keywords.csv', '5-responsive-search-ads.csv']
export const KEY = 'sk-test-agent-cli-0123456789abcdef'

type Json = Record<string, unknown>

export interface Case {
  env(api: Fake): Record<string, string>
  /** offered(): the tool lists of the model requests as the CLI sent them (codex's before the dialect proxy flattened them). */
  start(): Promise<{api: Fake; close(): Promise<void>; offered(): Json[][]}>
  /** Whether the CLI reports money. */
  reportsCost: boolean
  /** The stream line that ends a model turn. */
  turnEnd: string
}

/** How each agent CLI is pointed at its loopback model API, for the end-to-end tests. */
export const CASES: Record<'claude' | 'codex', Case> = {
  claude: {
    env: (api) => ({ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url}),
    async start() {
      const api = await startAnthropic({apiKey: KEY})
      return {api, close: () => api.close(), offered: () => toolLists(api.requests.filter((r) => r.path.startsWith('/v1/messages')))}
    },
    reportsCost: true,
    turnEnd: 'result',
  },
  codex: {
    env: (api) => ({OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${api.url}/v1`}),
    async start() {
      const fake = await startOpenAI({apiKey: KEY})
      const api = await startCodexDialect(fake)
      return {
        api,
        async close() {
          await api.close()
          await fake.close()
        },
        offered: () => toolLists(api.received),
      }
    },
    reportsCost: false,
    turnEnd: 'turn.completed',
  },
}

/** The tool definitions of every model request that offered tools. */
function toolLists(requests: Array<{body: unknown}>): Json[][] {
  return requests.map((r) => ((r.body as Json | null)?.tools ?? []) as Json[]).filter((t) => t.length > 0)
}
