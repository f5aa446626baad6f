// Mocha root hooks (every .mocharc requires this file): a test that leaves a server, socket, child
// process or timer open fails the run, naming what is left, instead of being hidden by mocha's
// forced exit or hanging the suite. Only resources that keep the process alive count (an
// unref'd timer does not), compared with what was open before the first test (stdio pipes).
// MOCHA_OPEN_HANDLES_TRACE=1 records where each resource was created and prints it for a leak.
import {createHook} from 'node:async_hooks'

const GRACE_MS = Number(process.env.MOCHA_OPEN_HANDLES_GRACE_MS ?? 3000)
const live = new Map()
if (process.env.MOCHA_OPEN_HANDLES_TRACE) {
  createHook({
    destroy(id) {
      live.delete(id)
    },
    init(id, type, _trigger, resource) {
      if (type === 'PROMISE' || type === 'TickObject' || type === 'Microtask') return
      const stack = new Error('created here').stack.split('\n').slice(2).filter((l) => !l.includes('node:internal')).slice(0, 8).join('\n')
      live.set(id, {resource, stack, type})
    },
  }).enable()
}

// async_hooks says TCPWRAP where getActiveResourcesInfo says TCPSocketWrap.
const kind = (type) => type.toLowerCase().replace(/wrap$/, '').replace('socket', '')

function traces(types) {
  const wanted = new Set(types.map(kind))
  const out = []
  for (const {resource, stack, type} of live.values()) {
    if (!wanted.has(kind(type))) continue
    if (typeof resource?.hasRef === 'function' && !resource.hasRef()) continue
    out.push(`${type}\n${stack}`)
  }
  return out.slice(-10).join('\n\n')
}

let baseline = new Map()

function counts() {
  const m = new Map()
  for (const type of process.getActiveResourcesInfo()) m.set(type, (m.get(type) ?? 0) + 1)
  return m
}

// `hook`: mocha's timer for the running hook is open too, and is not the tests' doing.
function leaked(hook) {
  const extra = []
  const now = counts()
  if (hook?.timer?.hasRef?.()) now.set('Timeout', (now.get('Timeout') ?? 1) - 1)
  for (const [type, n] of now) {
    const more = n - (baseline.get(type) ?? 0)
    if (more > 0) extra.push(`${more} ${type}`)
  }
  return extra
}

export const mochaHooks = {
  beforeAll() {
    baseline = counts()
    if (this.runnable().timer?.hasRef?.()) baseline.set('Timeout', (baseline.get('Timeout') ?? 1) - 1)
  },
  async afterAll() {
    this.timeout(GRACE_MS + 5000)
    const hook = this.runnable()
    // Closing a server or socket finishes a few event-loop turns after its callback.
    const until = Date.now() + GRACE_MS
    let extra = leaked(hook)
    while (extra.length > 0 && Date.now() < until) {
      // unref'd, so this wait is not itself an open timer
      await new Promise((resolve) => setTimeout(resolve, 50).unref())
      extra = leaked(hook)
    }
    if (extra.length === 0) return
    // The leak keeps the process alive after mocha reports; end it once the report is out.
    setTimeout(() => process.exit(process.exitCode || 1), 1000).unref()
    const where = live.size > 0 ? `\n${traces(extra.map((e) => e.split(' ')[1]))}` : ' (MOCHA_OPEN_HANDLES_TRACE=1 shows where each was created)'
    throw new Error(`tests left open: ${extra.join(', ')}: close servers, sockets, child processes and timers in after/afterEach hooks${where}`)
  },
}
