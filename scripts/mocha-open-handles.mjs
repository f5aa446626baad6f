// Mocha root hooks (every .mocharc requires this file): a test that leaves a server, socket, child
// process or timer open fails the run, naming what is left, instead of being hidden by mocha's
// forced exit or hanging the suite. Only resources that keep the process alive count (an
// unref'd timer does not), compared with what was open before the first test (stdio pipes).
const GRACE_MS = Number(process.env.MOCHA_OPEN_HANDLES_GRACE_MS ?? 3000)

let baseline = new Map()

function counts() {
  const m = new Map()
  for (const type of process.getActiveResourcesInfo()) m.set(type, (m.get(type) ?? 0) + 1)
  return m
}

function leaked() {
  const extra = []
  for (const [type, n] of counts()) {
    const more = n - (baseline.get(type) ?? 0)
    if (more > 0) extra.push(`${more} ${type}`)
  }
  return extra
}

export const mochaHooks = {
  beforeAll() {
    baseline = counts()
  },
  async afterAll() {
    this.timeout(GRACE_MS + 5000)
    // Closing a server or socket finishes a few event-loop turns after its callback.
    const until = Date.now() + GRACE_MS
    let extra = leaked()
    while (extra.length > 0 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      extra = leaked()
    }
    if (extra.length === 0) return
    // The leak keeps the process alive after mocha reports; end it once the report is out.
    setTimeout(() => process.exit(process.exitCode || 1), 1000).unref()
    throw new Error(`tests left open: ${extra.join(', ')} (close servers, sockets, child processes and timers in after/afterEach hooks)`)
  },
}
