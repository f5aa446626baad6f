import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {splitFormatFlag} from '../../ops/cli-args.js'

export default class SvcBackup extends ToolkitCommand<typeof SvcBackup> {
  static description = `Back up a data directory: a full tar.gz or Git bundle, or an incremental bundle after a commit

Safe while a server runs: the command asks that server (through its REST port and the token in <data-dir>/server.json) to flush its write-ahead log and back up one consistent point; writes continue meanwhile. Writes <output>.manifest.json beside the backup (type, SHA-256 checksum, refs, base_commit, created_at, size, documents). The file format may also be given as --format tar.gz|bundle.`
  static examples = [
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output backups/full.tar.gz',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output backups/full.bundle --format bundle',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output backups/inc-1.bundle --format bundle --base-commit 3f2a9c1',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --output backups/full.tar.gz --format json',
  ]
  static flags = {
    'base-commit': Flags.string({description: 'Make an incremental bundle of what came after this commit (needs the bundle format)'}),
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    'file-format': Flags.option({default: 'tar.gz' as const, description: 'Backup file format (also --format tar.gz|bundle)', options: ['tar.gz', 'bundle'] as const})(),
    output: Flags.string({char: 'o', description: 'Backup file to create (never overwritten)', required: true}),
  }

  public async init(): Promise<void> {
    this.argv = splitFormatFlag(this.argv)
    await super.init()
  }

  public async run(): Promise<void> {
    const {createBackup} = await import('../../ops/api.js')
    const spinner = this.out.spinner('backing up')
    try {
      const m = await createBackup({baseCommit: this.flags['base-commit'], dataDir: this.flags['data-dir'], format: this.flags['file-format'], onProgress: (t) => spinner.update(t), output: this.flags.output})
      spinner.succeed(`${m.type} backup written`)
      this.out.record({...m}, `${m.type} ${m.format} backup ${m.path}: ${m.size} bytes, ${m.documents} documents on main, ${m.refs.length} branch(es), sha256 ${m.checksum}`)
    } catch (error) {
      spinner.fail('backup failed')
      throw error
    }
  }
}
