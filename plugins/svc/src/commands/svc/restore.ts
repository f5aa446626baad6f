import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {splitFormatFlag} from '../../ops/cli-args.js'

export default class SvcRestore extends ToolkitCommand<typeof SvcRestore> {
  static description = `Restore a backup into a data directory, then rebuild the full-text index

A full backup goes into a new or empty directory (--force moves a non-empty one aside as <dir>.before-restore-<time>; nothing is deleted). An incremental bundle applies on top of the directory its base was restored into: restore the full backup, then each incremental in order. The server must not be running on the directory. The file format is read from the file; --format bundle (or tar.gz) checks it.`
  static examples = [
    '<%= config.bin %> <%= command.id %> --input backups/full.tar.gz --data-dir ./restored',
    '<%= config.bin %> <%= command.id %> --input backups/inc-1.bundle --format bundle --data-dir ./restored',
    '<%= config.bin %> <%= command.id %> --input backups/full.tar.gz --data-dir ./data --force',
  ]
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory to restore into'}),
    'file-format': Flags.option({description: 'Expected backup file format (also --format tar.gz|bundle)', options: ['tar.gz', 'bundle'] as const})(),
    force: Flags.boolean({description: 'Restore a full backup over a non-empty directory, keeping the old one aside'}),
    input: Flags.string({char: 'i', description: 'Backup file', required: true}),
  }

  public async init(): Promise<void> {
    this.argv = splitFormatFlag(this.argv)
    await super.init()
  }

  public async run(): Promise<void> {
    const {restoreBackup} = await import('../../ops/api.js')
    const spinner = this.out.spinner('restoring')
    try {
      const r = await restoreBackup({dataDir: this.flags['data-dir'], force: this.flags.force, format: this.flags['file-format'], input: this.flags.input, onProgress: (t) => spinner.update(t)})
      spinner.succeed(`${r.type} backup restored`)
      const aside = r.keptAside ? `; the previous directory is kept at ${r.keptAside}` : ''
      this.out.record({...r}, `${r.type} backup restored into ${r.dataDir}: ${r.refs.length} branch(es), ${r.documents} documents on main, index rebuilt (${r.indexDocuments})${aside}`)
    } catch (error) {
      spinner.fail('restore failed')
      throw error
    }
  }
}
