import {Args, Flags} from '@oclif/core'
import {ToolkitCommand, UsageError} from '@toolkit/kit'

export default class CampaignGenerate extends ToolkitCommand<typeof CampaignGenerate> {
  static args = {
    business: Args.string({description: 'The business.toml to plan from (not needed with --resume)'}),
  }

  static description = `Plan Google Ads campaigns from a business file, a budget and a catalog

Writes a run directory <out>/<YYYYMMDD-HHMMSS>-<hex>/ with run.json, workspace.json, events.ndjson, report.md and the google-ads/ import files. Exit 0 success, 1 incomplete, 3 invalid, 2 bad input.`

  static examples = [
    '<%= config.bin %> <%= command.id %> examples/acme-coffee/business.toml --skip-url-check',
    '<%= config.bin %> <%= command.id %> business.toml --out runs --parallel 8',
    '<%= config.bin %> <%= command.id %> --resume out/20260101-120000-a1b2c3',
    '<%= config.bin %> <%= command.id %> business.toml --format json | jq -c .event.type',
    'ANTHROPIC_API_KEY=... <%= config.bin %> <%= command.id %> business.toml --provider anthropic --max-cost 2',
    '<%= config.bin %> <%= command.id %> business.toml --provider openai-compatible --base-url http://127.0.0.1:11434/v1 --model qwen3',
  ]

  static flags = {
    'base-url': Flags.string({description: 'API providers: the endpoint, e.g. a local OpenAI-compatible server [default: the vendor\'s, or its *_BASE_URL variable]'}),
    images: Flags.string({description: 'Pictures for image campaigns: offline (composed from the catalog photos and logo, default), openai (OPENAI_API_KEY) or gemini (GEMINI_API_KEY)'}),
    'images-model': Flags.string({description: 'Model of the image provider [default: gpt-image-1 for openai, gemini-2.5-flash-image for gemini]'}),
    'max-cost': Flags.string({description: 'Stop starting model requests once the reported cost reaches this many US dollars; the run ends incomplete and can be resumed'}),
    'max-turns': Flags.integer({description: 'Tool calls allowed per mission attempt [default: 200]', min: 1}),
    model: Flags.string({description: 'Model name for the provider (recorded in run.json)'}),
    out: Flags.string({description: 'Folder that receives the run directory [default: out]'}),
    parallel: Flags.integer({description: 'Campaign missions run at the same time [default: 4]', min: 1}),
    provider: Flags.string({description: 'Model provider: local (the offline planner, default), anthropic, openai, openai-compatible, gemini, or an agent CLI: claude, codex; see `campaign providers`'}),
    resume: Flags.string({description: 'Run directory to resume: runs only its unfinished missions'}),
    'skip-url-check': Flags.boolean({description: 'Do not request the final URLs'}),
  }

  public async run(): Promise<void> {
    const {runCommand} = await import('../../command-run.js')
    const {business} = this.args
    const f = this.flags
    if (!business && !f.resume) throw new UsageError('give a business.toml, or --resume <run-dir>')
    if (business && f.resume) throw new UsageError('give either a business.toml or --resume <run-dir>, not both')
    const {loadCampaignConfig} = await import('../../campaign-config.js')
    let maxCostFlag: number | undefined
    if (f['max-cost'] !== undefined) {
      maxCostFlag = Number(f['max-cost'])
      if (!Number.isFinite(maxCostFlag) || maxCostFlag <= 0) throw new UsageError(`--max-cost must be a positive number of US dollars, got "${f['max-cost']}"`)
    }
    const c = await loadCampaignConfig(this.config, {baseUrl: f['base-url'], images: f.images, imagesModel: f['images-model'], maxCost: maxCostFlag, maxTurns: f['max-turns'], model: f.model, out: f.out, parallel: f.parallel, provider: f.provider})
    if (!Number.isFinite(c.maxCost) || c.maxCost < 0) throw new UsageError(`maxCost must be a number of US dollars (0 for no limit), got ${c.maxCost}`)
    if (!Number.isInteger(c.parallel) || c.parallel < 1) throw new UsageError(`parallel must be a whole number of at least 1, got ${c.parallel}`)
    if (!Number.isInteger(c.maxTurns) || c.maxTurns < 1) throw new UsageError(`max-turns must be a whole number of at least 1, got ${c.maxTurns}`)
    const model = c.model === '' ? undefined : c.model
    await runCommand(this.out, async (pipeline, opts) =>
      f.resume
        ? // A resumed run keeps the provider, model and base URL it started with unless a flag says otherwise.
          pipeline.resume(f.resume, {...opts, baseUrl: f['base-url'] ?? null, model: f.model, provider: f.provider}, opts.listeners)
        : pipeline.generate({...opts, businessFile: business as string, model, out: c.out, provider: c.provider}, opts.listeners),
      {baseUrl: c.baseUrl || null, images: c.images, imagesModel: c.imagesModel || null, maxCostUsd: c.maxCost > 0 ? c.maxCost : null, maxTurns: c.maxTurns, parallel: c.parallel, skipUrlCheck: f['skip-url-check']},
    )
  }
}
