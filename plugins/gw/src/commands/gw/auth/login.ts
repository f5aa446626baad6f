import {Args, Flags} from '@oclif/core'
import {ToolkitCommand, UsageError} from '@toolkit/kit'

import {login} from '../../../client/auth.js'
import {clientFlags, commandContext} from '../../../client/cli.js'
import {AuthError} from '../../../client/errors.js'

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('--token-stdin reads the token from a pipe: `printenv TOKEN | toolkit gw auth login <server> --token-stdin`')
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export default class GwAuthLogin extends ToolkitCommand<typeof GwAuthLogin> {
  static args = {server: Args.string({description: 'server name from servers.json (optional when only one HTTP server is configured)'})}
  static description = `Sign in to a server afresh

Runs the OAuth flow (discovery, dynamic registration, PKCE, browser, local callback on localhost:8085-8099 or GW_OAUTH_CALLBACK_PORT) and saves the tokens. Without a display the authorization URL is printed. Servers without dynamic registration get a token prompt with hints; --token-stdin saves a token read from standard input instead.`
  static examples = [
    '<%= config.bin %> <%= command.id %> linear',
    'printenv GITHUB_TOKEN | <%= config.bin %> <%= command.id %> github --token-stdin',
  ]
  static flags = {
    ...clientFlags,
    'token-stdin': Flags.boolean({description: 'read an access token from standard input and save it'}),
  }

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: true})
    let name = this.args.server
    if (!name) {
      const http = Object.keys(ctx.config.servers).filter((n) => ctx.config.servers[n].url)
      if (http.length !== 1) throw new UsageError(`name the server to sign in to${http.length > 0 ? ` (one of: ${http.join(', ')})` : ''}`)
      name = http[0]
    }
    const token = this.flags['token-stdin'] ? await readStdin() : undefined
    // The user asked to sign in: the flow runs even without a TTY (the URL is printed).
    const record = await login({...ctx, interactive: true, prompt: ctx.interactive ? undefined : noTerminalPrompt}, name, {token})
    this.out.record({type: 'login', ...record}, `${record.server}: ${OUTCOME[record.auth] ?? `signed in (${record.auth})`}`)
  }
}

const OUTCOME: Record<string, string> = {
  config: 'uses the Authorization header from servers.json; nothing to sign in',
  manual: 'token saved',
  none: 'the server does not ask for authentication',
  oauth: 'signed in with OAuth, tokens saved',
  store: 'token accepted and saved',
}

async function noTerminalPrompt(): Promise<string> {
  throw new AuthError('this server has no dynamic client registration and there is no terminal to type a token: pipe one to `toolkit gw auth login <server> --token-stdin`')
}
