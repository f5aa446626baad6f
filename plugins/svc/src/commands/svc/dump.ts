import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcDump extends ToolkitCommand<typeof SvcDump> {
  static description = `Export every current document of a branch to one JSON file

The file is {"branch", "commit", "exportedAt", "documents": [...], "count"}, documents in id order. Safe while a server runs (the dump then reflects what is committed to Git).`
  static examples = [
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output dump.json',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --branch dev --output - | jq .count',
  ]
  static flags = {
    branch: Flags.string({default: 'main', description: 'Branch to export'}),
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    output: Flags.string({char: 'o', description: 'Output file (- for standard output)', required: true}),
  }

  public async run(): Promise<void> {
    const {dumpDocuments} = await import('../../ops/dump.js')
    const r = await dumpDocuments({branch: this.flags.branch, dataDir: this.flags['data-dir'], output: this.flags.output})
    if (r.warning) this.out.warn(r.warning)
    if (this.flags.output !== '-') this.out.record({...r}, `${r.documents} documents of branch ${r.branch} written to ${r.output}`)
  }
}
