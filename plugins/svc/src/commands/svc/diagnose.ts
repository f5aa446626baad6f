import {Flags} from '@oclif/core'
import {loadConfig, ToolkitCommand, ToolkitError} from '@toolkit/kit'

export default class SvcDiagnose extends ToolkitCommand<typeof SvcDiagnose> {
  static description = `Check a data directory: repository integrity, lock files, branches, write-ahead log, index, remote sync

Read-only and safe while a server runs. Prints one record per check (status ok, warning or error); exits 1 when any check is an error.`
  static examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --config /etc/svc/config.edn',
    '<%= config.bin %> <%= command.id %> --data-dir ./data',
    '<%= config.bin %> <%= command.id %> --data-dir /var/lib/svc --format json',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --no-fsck',
  ]
  static flags = {
    config: Flags.string({description: 'config.edn of the server whose data directory to check (default: ./config.edn when present)'}),
    'data-dir': Flags.string({description: 'Data directory (default: the one config.edn names, else ./data)'}),
    fsck: Flags.boolean({allowNo: true, default: true, description: 'Run git fsck --full (slow on very large repositories)'}),
  }

  public async run(): Promise<void> {
    const {resolveDataDir} = await import('../../ops/data-dir.js')
    const {diagnose} = await import('../../ops/diagnose.js')
    const {dataDir, indexDir, warnings} = await resolveDataDir({config: this.flags.config, dataDir: this.flags['data-dir']}, process.cwd(), (request) => loadConfig(this.config, request))
    for (const w of warnings) this.out.warn(w)
    const checks = await diagnose({dataDir, fsck: this.flags.fsck, indexDir})
    const mark = {error: this.out.color.red('error  '), ok: this.out.color.green('ok     '), warning: this.out.color.yellow('warning')}
    for (const c of checks) this.out.record({...c}, `${mark[c.status]} ${c.check.padEnd(13)} ${c.message}`)
    const errors = checks.filter((c) => c.status === 'error').length
    if (errors > 0) throw new ToolkitError(`diagnose found ${errors} error(s) in ${dataDir}`, {code: 'diagnose_failed', exit: 1})
  }
}
