import {Flags} from '@oclif/core'
import {loadConfig, ToolkitCommand} from '@toolkit/kit'

export default class SvcDump extends ToolkitCommand<typeof SvcDump> {
  static description = `Export every current document of a branch to one JSON file

The file is {"branch", "commit", "exportedAt", "documents": [...], "count"}, documents in id order. Safe while a server runs (the dump then reflects what is committed to Git).`
  static examples = [
    '<%= config.bin %> <%= command.id %> --output dump.json',
    '<%= config.bin %> <%= command.id %> --config /etc/svc/config.edn --output dump.json',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output dump.json',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --branch dev --output - | jq .count',
  ]
  static flags = {
    branch: Flags.string({default: 'main', description: 'Branch to export'}),
    config: Flags.string({description: 'config.edn of the server whose data directory to dump (default: ./config.edn when present)'}),
    'data-dir': Flags.string({description: 'Data directory (default: the one config.edn names, else ./data)'}),
    output: Flags.string({char: 'o', description: 'Output file (- for standard output)', required: true}),
  }

  public async run(): Promise<void> {
    const {resolveDataDir} = await import('../../ops/data-dir.js')
    const {dumpDocuments} = await import('../../ops/dump.js')
    const {dataDir, warnings} = await resolveDataDir({config: this.flags.config, dataDir: this.flags['data-dir']}, process.cwd(), (request) => loadConfig(this.config, request))
    for (const w of warnings) this.out.warn(w)
    const r = await dumpDocuments({branch: this.flags.branch, dataDir, output: this.flags.output})
    if (r.warning) this.out.warn(r.warning)
    if (this.flags.output !== '-') this.out.record({...r}, `${r.documents} documents of branch ${r.branch} written to ${r.output}`)
  }
}
