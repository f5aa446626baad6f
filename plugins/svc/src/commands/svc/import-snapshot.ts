import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcImportSnapshot extends ToolkitCommand<typeof SvcImportSnapshot> {
  static description = `Import the branches of a snapshot bundle, then reindex them

Before anything changes, the bundle is checked (its manifest's SHA-256 when present, git bundle verify: every commit it builds on is here) and each branch must be new or move forward. With --verify every object is also checked as it is read (git fsck rules). On a running server (asked through its REST port) only new branches can be imported.`
  static examples = [
    '<%= config.bin %> <%= command.id %> --data-dir ./data --input snapshots/dev.bundle',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --input snapshots/dev.bundle --verify --format json',
  ]
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    input: Flags.string({char: 'i', description: 'Bundle file', required: true}),
    verify: Flags.boolean({description: 'Check every object of the bundle while importing it'}),
  }

  public async run(): Promise<void> {
    const {importSnapshot} = await import('../../ops/api.js')
    const spinner = this.out.spinner('importing')
    try {
      const r = await importSnapshot({dataDir: this.flags['data-dir'], input: this.flags.input, onProgress: (t) => spinner.update(t), verify: this.flags.verify})
      spinner.succeed('snapshot imported')
      const what = r.imported.length === 0 ? 'nothing new (every branch already at the snapshot\'s commit)' : r.imported.map((u) => `${u.name.replace('refs/heads/', '')} ${u.previous ? `${u.previous.slice(0, 12)}..` : 'new at '}${u.commit.slice(0, 12)}`).join(', ')
      this.out.record({...r}, `imported into ${r.dataDir}: ${what}`)
    } catch (error) {
      spinner.fail('import failed')
      throw error
    }
  }
}
