const FILE_FORMATS = new Set(['bundle', 'tar.gz', 'tgz'])

/**
 * The spec spells the backup file format `--format tar.gz|bundle`, while every toolkit command
 * has `--format json|text` for its output. Both are accepted: a `--format` whose value is a file
 * format becomes `--file-format`, so `--format bundle --format json` means both.
 */
export function splitFormatFlag(argv: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--') {
      out.push(...argv.slice(i))
      break
    }
    if (a === '--format' && FILE_FORMATS.has(argv[i + 1] ?? '')) {
      out.push('--file-format', argv[++i] === 'tgz' ? 'tar.gz' : argv[i])
    } else if (a.startsWith('--format=') && FILE_FORMATS.has(a.slice(9))) {
      out.push('--file-format', a.slice(9) === 'tgz' ? 'tar.gz' : a.slice(9))
    } else out.push(a)
  }
  return out
}
