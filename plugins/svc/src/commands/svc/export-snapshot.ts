import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcExportSnapshot extends ToolkitCommand<typeof SvcExportSnapshot> {
  static description = `Export chosen branches as a Git bundle (a snapshot), with a manifest beside it

Every branch when --refs is not given. Safe while a server runs (it takes one consistent point).`
  static examples = [
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output snapshots/dev.bundle --refs dev',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output snapshots/all.bundle',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output s.bundle --refs main --refs dev --format json',
  ]
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    output: Flags.string({char: 'o', description: 'Bundle file to create', required: true}),
    refs: Flags.string({description: 'Branch to include (repeatable; dev or refs/heads/dev)', multiple: true}),
  }

  public async run(): Promise<void> {
    const {exportSnapshot} = await import('../../ops/api.js')
    const spinner = this.out.spinner('exporting')
    try {
      const m = await exportSnapshot({dataDir: this.flags['data-dir'], onProgress: (t) => spinner.update(t), output: this.flags.output, refs: this.flags.refs})
      spinner.succeed('snapshot written')
      this.out.record({...m}, `snapshot ${m.path}: ${m.refs.map((r) => `${r.name.replace('refs/heads/', '')}@${r.commit.slice(0, 12)}`).join(', ')}; ${m.size} bytes, sha256 ${m.checksum}`)
    } catch (error) {
      spinner.fail('export failed')
      throw error
    }
  }
}
