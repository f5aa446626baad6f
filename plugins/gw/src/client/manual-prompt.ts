import {tokenHint} from './token-hints.js'

/** What the manual prompt shows; `prompt` implementations (inquirer, tests) answer with a token. */
export interface TokenQuestion {
  /** Lines shown before the question (the hint). */
  hint: string[]
  message: string
  serverName: string
  serverUrl: string
}

export type TokenPrompt = (q: TokenQuestion) => Promise<string>

export function tokenQuestion(serverName: string, serverUrl: string, reason: string): TokenQuestion {
  const h = tokenHint(serverUrl)
  const hint = [`${serverName} (${serverUrl}) needs a token: ${reason}.`]
  if (h) {
    hint.push(`${h.service} uses a ${h.tokenType}. Create one at ${h.where}`)
    return {hint, message: `${h.service} ${h.tokenType}`, serverName, serverUrl}
  }
  hint.push('Paste an access token issued by this service (it is sent as "Authorization: Bearer <token>").')
  return {hint, message: `Access token for ${serverUrl}`, serverName, serverUrl}
}

/** The interactive prompt: masked input on the terminal, written to stderr so stdout stays clean. */
export const inquirerTokenPrompt: TokenPrompt = async (q) => {
  const {password} = await import('@inquirer/prompts')
  for (const line of q.hint) process.stderr.write(`${line}\n`)
  const answer = await password(
    {mask: '*', message: q.message, validate: (v) => (v.trim() === '' ? 'a token is required (Ctrl-C to cancel)' : true)},
    {output: process.stderr},
  )
  return answer.trim()
}
