import type {Started} from '../helpers/cli.js'

/** Stops a server a fuzz suite started (SIGTERM, then waits for the exit); nothing when it already ended. */
export async function stopServer(s: Started | undefined): Promise<void> {
  if (s?.child.exitCode !== null) return
  s.child.kill('SIGTERM')
  await s.exited
}
