import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcCompact extends ToolkitCommand<typeof SvcCompact> {
  static description = `Compact the repository: Git garbage collection and repacking; reports bytes before and after

With no server running: the write-ahead log is replayed, then git gc --prune=now runs (this also drops the objects of removed branches). With a server running, the server repacks every object into one pack itself (asked through its REST port), so writes continue; unreachable loose objects then wait for the next compaction without a server.`
  static examples = ['<%= config.bin %> <%= command.id %> --data-dir ./data', '<%= config.bin %> <%= command.id %> --data-dir /var/lib/svc --format json']
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
  }

  public async run(): Promise<void> {
    const {compact} = await import('../../ops/compact.js')
    const spinner = this.out.spinner('compacting')
    try {
      const r = await compact({dataDir: this.flags['data-dir']})
      spinner.succeed('compacted')
      this.out.record({...r}, `compacted ${r.dataDir} (${r.mode}): ${r.bytesBefore} -> ${r.bytesAfter} bytes of objects, ${r.packsBefore} -> ${r.packsAfter} pack(s)`)
    } catch (error) {
      spinner.fail('compaction failed')
      throw error
    }
  }
}
