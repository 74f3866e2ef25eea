// npm run check:prism: the contract checked from outside. Starts the real app on a fresh
// in-memory database, puts `prism proxy` in observer mode (--errors=false: it forwards
// everything and reports) in front of it, drives a smoke scenario through the proxy
// (scripts/prism/scenario.ts: every operation, every documented status a client can cause)
// and fails when Prism reports any response-side violation, warnings included, or when an
// operation or a documented status was not exercised (see report() for the exact rules).
// Request-side violations of refused requests are expected (the scenario sends bad requests on
// purpose) and only counted.
import { createServer, type AddressInfo, type Server } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { routes } from '../generated/routes.js'
import { buildApp } from '../src/app.js'
import { defaults, type Config } from '../src/config.js'
import { openDatabase, type DbHandle } from '../src/db/client.js'
import { Observer, UnexpectedStatus, type Exchange } from './prism/observer.js'
import { startPrism, type Prism } from './prism/prism.js'
import { runScenario } from './prism/scenario.js'
import { documentedStatuses } from './prism/spec.js'

/** The whole run, start-up included; past it everything is stopped and the run fails. */
const DEADLINE_MS = 180_000
const ADMIN_TOKEN = 'prism-observe-admin-token-0123456789'
/**
 * Requests a minute per key, all operations together: above the scenario's own calls with one
 * key (about 150), low enough to spend a budget quickly for the 429s.
 */
const RATE_LIMIT = 400

/**
 * Statuses no client can cause against a healthy build; the scenario does not try them.
 * 500 is a bug by definition (every failure a client or the database can cause has its own code).
 */
const UNREACHABLE: Record<string, string> = { '500': 'only a server bug answers 500' }

/**
 * Operations Prism's proxy cannot observe: it follows a redirect and returns what its target
 * answered (stoplightio/prism#1977, open), so a 3xx never reaches it. A test holds each to the spec.
 */
const NOT_THROUGH_PRISM: Record<string, string> = {
  redirectToApiReference: "a 301, which Prism's proxy follows (test/http/routes.test.ts holds it to the spec)",
}

const prisms: Prism[] = []
const apps: FastifyInstance[] = []

async function stopAll(): Promise<void> {
  await Promise.allSettled(prisms.map((p) => p.stop()))
  await Promise.allSettled(apps.map((a) => a.close()))
}

const watchdog = setTimeout(() => {
  console.error(`FAIL: check:prism did not finish within ${DEADLINE_MS / 1000} s`)
  void stopAll().finally(() => process.exit(1))
}, DEADLINE_MS)

/**
 * A port held open until the app takes it: Prism is told the upstream's address before the
 * database and the app are up, and no other process may take the port meanwhile.
 */
async function reservePort(): Promise<{ port: number; server: Server }> {
  // Refuses what Prism forwards meanwhile (its readiness probe), so that nothing hangs.
  const server = createServer((socket) => socket.destroy())
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, server }
}

async function listen(config: Config, database: DbHandle, reserved: { port: number; server: Server }): Promise<FastifyInstance> {
  const app = await buildApp(config, database)
  apps.push(app)
  await new Promise((resolve) => reserved.server.close(resolve))
  await app.listen({ port: reserved.port, host: '127.0.0.1' })
  return app
}

/**
 * What fails the run: a response-side violation (Prism's location starts with 'response'),
 * errors and warnings alike; a request-side violation on a request the server accepted (2xx or
 * 304), since the server then took what the spec forbids; a request Prism could not route; and
 * an operation or a documented status the scenario did not reach. Request-side violations of
 * refused requests are the scenario's deliberate bad input: counted, not failed.
 */
function report(exchanges: Exchange[], completed: boolean): string[] {
  const failures: string[] = []
  let expected = 0
  for (const exchange of exchanges) {
    const where = `${exchange.method} ${exchange.path} → ${exchange.status} (${exchange.operationId})`
    for (const violation of exchange.violations) {
      const side = violation.location[0]
      const text = `${violation.severity} at ${violation.location.join('.')}: ${violation.message}`
      if (side === 'response') failures.push(`${where}: ${text}`)
      // Our route table matched it (Observer checks), so Prism's router disagreeing with ours
      // means this response went unchecked.
      else if (violation.message === 'Selected route not found') failures.push(`${where}: Prism found no operation for it, so it checked nothing`)
      else if (exchange.status < 400) failures.push(`${where}: accepted a request the spec forbids: ${text}`)
      else expected++
    }
  }

  // A scenario stopped half-way leaves most statuses unexercised; listing them would bury its error.
  if (!completed) {
    console.log(`${exchanges.length} requests through Prism before the scenario stopped; coverage not checked.`)
    return failures
  }
  const seen = new Map<string, Set<string>>()
  for (const exchange of exchanges) {
    if (!seen.has(exchange.operationId)) seen.set(exchange.operationId, new Set())
    seen.get(exchange.operationId)!.add(String(exchange.status))
  }
  let pairs = 0
  for (const route of routes) {
    if (NOT_THROUGH_PRISM[route.operationId]) continue
    const got = seen.get(route.operationId)
    if (!got) {
      failures.push(`${route.operationId} (${route.method} ${route.path}) was not exercised: add it to scripts/prism/scenario.ts`)
      continue
    }
    for (const status of documentedStatuses.get(route.operationId) ?? []) {
      if (UNREACHABLE[status]) continue
      if (got.has(status)) pairs++
      else failures.push(`${route.operationId}: documented status ${status} was not exercised`)
    }
  }
  const skipped = [...Object.entries(UNREACHABLE), ...Object.entries(NOT_THROUGH_PRISM)].map(([what, why]) => `${what}: ${why}`).join('; ')
  console.log(
    `${exchanges.length} requests through Prism: ${routes.length} operations, ${pairs} documented (operation, status) pairs ` +
      `(not tried: ${skipped}); ${expected} request-side violations, all on requests the server refused.`,
  )
  if (process.env.PRISM_VERBOSE) {
    for (const e of exchanges) console.log(`  ${e.ms.toFixed(0).padStart(5)} ms ${e.method} ${e.path.slice(0, 90)} → ${e.status}${e.violations.length ? ` ${JSON.stringify(e.violations)}` : ''}`)
  }
  return failures
}

async function main(): Promise<number> {
  const started = Date.now()
  const [upstream, upstreamPlain] = [await reservePort(), await reservePort()]
  // Prism takes seconds to start: it starts while the database and the app do.
  const prismsUp = Promise.all([startPrism(`http://127.0.0.1:${upstream.port}`), startPrism(`http://127.0.0.1:${upstreamPlain.port}`)])
  prismsUp.then((started) => prisms.push(...started), () => {})
  // In memory: a fresh database each run, nothing left behind.
  const database = await openDatabase({})
  await database.migrate()
  const config: Config = { ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN, rateLimitPerMinute: RATE_LIMIT, redisUrl: undefined }
  const app = await listen(config, database, upstream)
  // The server as deployed by default: no operator API, the default budgets.
  const plainApp = await listen({ ...config, adminToken: undefined, rateLimitPerMinute: defaults.rateLimitPerMinute }, database, upstreamPlain)
  const [prism, prismPlain] = await prismsUp
  console.log(`server and Prism up in ${((Date.now() - started) / 1000).toFixed(1)} s`)

  const exchanges: Exchange[] = []
  const failures: string[] = []
  try {
    await runScenario({
      api: new Observer(prism.url, exchanges),
      plain: new Observer(prismPlain.url, exchanges),
      adminToken: ADMIN_TOKEN,
      config,
      app,
      plainApp,
      database,
    })
  } catch (error) {
    failures.push(error instanceof UnexpectedStatus ? `scenario: ${error.message}` : `scenario failed: ${(error as Error).stack}`)
  }
  failures.unshift(...report(exchanges, failures.length === 0))
  if (failures.length) {
    console.error(`\nFAIL: ${failures.length} problem(s):`)
    for (const failure of failures) console.error(`  - ${failure}`)
    return 1
  }
  console.log(`OK: no violations, every operation and documented status exercised (${((Date.now() - started) / 1000).toFixed(1)} s)`)
  return 0
}

let code = 1
try {
  code = await main()
} catch (error) {
  console.error(`FAIL: ${(error as Error).stack ?? error}`)
} finally {
  await stopAll()
  clearTimeout(watchdog)
}
process.exit(code)
