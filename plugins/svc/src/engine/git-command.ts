/**
 * The program and arguments that start `git args`: through coreutils' `nice` for background work,
 * so git and everything it starts (repack's pack-objects) run lowered from their first
 * instruction (a setpriority after the spawn raced with git's own children).
 */
export function gitCommand(args: string[], nice?: number): [string, string[]] {
  return nice === undefined || process.platform === 'win32' ? ['git', args] : ['nice', ['-n', String(nice), 'git', ...args]]
}
