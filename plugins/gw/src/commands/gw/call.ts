import {Args, Flags} from '@oclif/core'
import {ToolkitCommand, UsageError} from '@toolkit/kit'

import {callTool, resultText, ToolError} from '../../client/call.js'
import {clientFlags, commandContext} from '../../client/cli.js'

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('"-" reads the arguments as JSON from standard input, which is a terminal here')
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8').trim()
  return text === '' ? '{}' : text
}

export default class GwCall extends ToolkitCommand<typeof GwCall> {
  static args = {
    server: Args.string({description: 'server name from servers.json', required: true}),
    tool: Args.string({description: 'tool name (see `toolkit gw tools <server>`)', required: true}),
  }
  static description = `Call a tool on a server

Arguments are one JSON object (\`-\` reads it from standard input), or key=value pairs typed by the tool's input schema (key:=<json> for a raw JSON value). They are checked against the input schema before anything is sent. A result flagged as an error prints the server's message and exits 1.`
  static examples = [
    `<%= config.bin %> <%= command.id %> everything echo message=hello`,
    `<%= config.bin %> <%= command.id %> everything get-sum '{"a": 2, "b": 3}'`,
    `<%= config.bin %> <%= command.id %> everything get-sum a=2 b:=3 --format json`,
    `jq -n '{message: "hi"}' | <%= config.bin %> <%= command.id %> everything echo -`,
  ]
  static flags = {
    ...clientFlags,
    timeout: Flags.integer({description: 'seconds to wait for the result', min: 1}),
  }
  static strict = false
  static usage = '<%= command.id %> SERVER TOOL [ARGS...] [--format json|text] [--config <file>] [--timeout <value>]'

  public async run(): Promise<void> {
    const {argv} = await this.parse(GwCall)
    const rest = (argv as string[]).slice(2)
    // `-` stands for a JSON object on standard input (large or generated arguments).
    const dash = rest.indexOf('-')
    if (dash !== -1) rest[dash] = await readStdin()
    const ctx = await commandContext(this.config, this.out, this.flags, {network: true})
    const record = await callTool(ctx, this.args.server, this.args.tool, rest, {timeoutMs: this.flags.timeout ? this.flags.timeout * 1000 : undefined})
    const text = resultText(record)
    this.out.record({type: 'result', ...record}, text)
    if (record.isError) {
      const first = text.split('\n').find((l) => l.trim()) ?? 'no message'
      throw new ToolError(`tool "${record.tool}" on "${record.server}" failed: ${first}`, record)
    }
  }
}
