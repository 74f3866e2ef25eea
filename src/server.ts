// Entry point: read the configuration, open and migrate the database, build the app, listen,
// start the background jobs (src/jobs/), and drain on SIGTERM/SIGINT (stop accepting, finish
// in-flight requests and webhook attempts, close the pool).
// Nothing a user sees is created before the port is bound: a start that cannot listen leaves
// no demo project behind whose key nobody saw. What the operator must fix (a bad setting, a
// busy port, a data directory another process holds) is one line on stderr and exit code 1.
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { loadConfig, SetupError, type Config } from './config.js'
import { listenOnHost } from './http/listen.js'
import { openConfiguredDatabase, warnWithoutStatementTimeout, type DbHandle } from './db/client.js'
import { loggableError } from './db/results.js'
import { makeRepos } from './db/repos/index.js'
import { autovacuumRuns, startWebhookDispatcher, type WebhookDispatcher } from './jobs/webhook-dispatcher.js'
import { eventPruning } from './jobs/event-pruning.js'
import type { PeriodicJob } from './jobs/periodic.js'
import { publicationSweep } from './jobs/publication-sweep.js'

/** The message for an error the operator can act on; undefined for anything else (a bug: stack). */
function setupProblem(error: unknown, config: Config | undefined): string | undefined {
  if (error instanceof SetupError) return error.message
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (config && code === 'EADDRINUSE') {
    return `Port ${config.port} on ${config.host} is already in use by another process: stop it, or set PORT to a free port.`
  }
  if (config && (code === 'ENOTFOUND' || code === 'EAI_AGAIN') && (error as { syscall?: string }).syscall === 'getaddrinfo') {
    return `HOST ${config.host} is not an address of this machine, nor a name it can look up: set HOST to one (127.0.0.1, 0.0.0.0, ::).`
  }
  if (config && (code === 'EACCES' || code === 'EADDRNOTAVAIL')) {
    return `Cannot listen on ${config.host}:${config.port} (${code}): set HOST to an address of this machine and PORT to a port this user may bind (1024 or above).`
  }
  return undefined
}

/** Where a command on this machine reaches the server: HOST, or the loopback address when HOST is every address. */
const reachableHost = (config: Config) => (config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host)

/** A newcomer on an empty embedded database gets a project to call straight away; the key is printed once, never logged. */
async function createDemoProject(config: Config, database: DbHandle, port: number): Promise<void> {
  const projects = makeRepos(database.db).projects
  if (database.kind !== 'pglite' || (await projects.count()) > 0) return
  const { project, apiKey } = await projects.create({ name: 'Demo project', plan: 'pro', beta_enabled: true })
  process.stdout.write(
    `\nCreated a demo project on the empty embedded database (Pro plan, beta enabled).\n` +
      `  project: ${project.id}\n  API key: ${apiKey}\n` +
      `This key is shown once. Try: curl -H "Authorization: Bearer ${apiKey}" http://${reachableHost(config)}:${port}/v1/changelog\n\n`,
  )
}

/** DATABASE_URL as an operator may see it on the terminal: the password replaced by a placeholder. */
function maskedDatabaseUrl(url: string): string {
  try {
    const u = new URL(url)
    if (!u.password && !u.searchParams.has('password')) return url
    const search = u.search.replace(/([?&]password=)[^&]*/, '$1<password>')
    return `${u.protocol}//${u.username}${u.password ? ':<password>' : ''}@${u.host}${u.pathname}${search}`
  } catch {
    return '...'
  }
}

/**
 * On an empty PostgreSQL database nobody can call the API yet, and no demo project is made there
 * (that is the embedded database's convenience): say how to make the first project and key.
 */
async function firstProjectHint(config: Config, database: DbHandle, port: number): Promise<void> {
  if (database.kind !== 'postgres' || (await makeRepos(database.db).projects.count()) > 0) return
  const host = reachableHost(config)
  const body = `'{"name": "My project", "plan": "pro", "beta_enabled": true}'`
  process.stdout.write(
    `\nNo project yet in ${database.description}. Create the first one and its API key (printed once):\n` +
      `  DATABASE_URL='${maskedDatabaseUrl(config.databaseUrl!)}' npm run admin -- create-project --name "My project" --plan pro --beta on\n` +
      `or through the operator API${config.adminToken ? '' : ' (start the server with ADMIN_TOKEN set)'}:\n` +
      `  curl -s -X POST http://${host}:${port}/admin/v1/projects -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' -d ${body}\n\n`,
  )
}

let config: Config | undefined
let database: DbHandle | undefined
let app: FastifyInstance | undefined
/** Stops accepting at HOST's addresses beyond the first (the app's close stops the first). */
let stopOtherAddresses: (() => Promise<void>) | undefined
let dispatcher: WebhookDispatcher | undefined
let jobs: PeriodicJob<unknown>[] = []

async function start(): Promise<void> {
  try {
    config = loadConfig()
    database = await openConfiguredDatabase(config, 'the server')
    // A write that makes deliveries due wakes this instance's dispatcher once it has committed.
    app = await buildApp(config, database, { deliveriesDue: () => dispatcher?.wake() })
    // From the moment the port opens (before the demo project and the background jobs below
    // exist), a SIGTERM or SIGINT drains the server, as at any other time, instead of the default
    // action, which kills it in the middle of what it serves. Registered before listen(), since
    // "Server listening" is printed an event-loop turn before listen() returns. Until here the
    // default action stands: nothing is served yet, and a start waiting on an unreachable
    // database stops at once.
    drainOnSignal(closeWithGrace({ delay: GRACE_MS, skip: DRAIN_SIGNALS }, shutDown))
    stopOtherAddresses = await listenOnHost(app, config.host, config.port)
    if (config.webhookDispatch) {
      dispatcher = startWebhookDispatcher({
        db: database.db,
        config,
        log: app.log,
        metrics: app.metrics,
        // Without autovacuum (PGlite's, or a PostgreSQL's turned off) the dispatcher keeps the
        // statistics its claim is planned by.
        analyzeEveryMs: (await autovacuumRuns(database)) ? undefined : 60_000,
      })
    }
    // The port listened on (PORT=0 lets the system choose it).
    const port = (app.server.address() as AddressInfo).port
    await createDemoProject(config, database, port)
    // Conveniences: a database that stops answering right now is for the requests to report.
    await firstProjectHint(config, database, port).catch(() => undefined)
    await warnWithoutStatementTimeout(database, app.log).catch(() => undefined)
    // The background work every instance shares (src/jobs/).
    const repos = makeRepos(database.db, config.publicBaseUrl, { deliveriesDue: () => dispatcher?.wake() })
    jobs = [publicationSweep({ repos, log: app.log }), eventPruning({ repos, log: app.log })]
    for (const job of jobs) job.start()
  } catch (error) {
    const problem = setupProblem(error, config)
    if (!problem) throw error
    process.stderr.write(`Cannot start: ${problem}\n`)
    await closeAll()
    process.exit(1)
  }
}

const DRAIN_SIGNALS: ('SIGTERM' | 'SIGINT')[] = ['SIGTERM', 'SIGINT']
/** close-with-grace's bound on a stop: past it, the process exits 1 ("killed by timeout"). */
const GRACE_MS = 10_000
/**
 * The end of GRACE_MS, kept for what must still happen after the requests: a request still in
 * flight by then is answered 503 as the pool is ended under it, and the process exits 0.
 */
const LAST_MS = 1_500
/** How soon a second stop signal is the first one's copy rather than a request to stop at once. */
const SAME_STOP_MS = 500
let stopSignal: string | undefined
/** Whether shutDown has begun, whatever began it. */
let shuttingDown = false

/**
 * SIGTERM and SIGINT drain the server through close-with-grace, which takes any later signal for
 * "stop at once" (exit 1). `npm start` runs the server under npm (package.json's `exec`), which
 * passes a signal on; a terminal's Ctrl-C, or a shell's `kill %npm`, also reaches the server
 * itself, as one of npm's process group. So one stop arrives twice within milliseconds: a second
 * signal within SAME_STOP_MS is that copy and changes nothing, a later one stops at once.
 */
function drainOnSignal(grace: { close(): void }): void {
  let firstAt = 0
  const onSignal = (signal: string) => {
    // The server may be draining already (close-with-grace took another signal, SIGHUP say, or an
    // error): then this is a second signal, as close-with-grace takes one.
    if (stopSignal === undefined && !shuttingDown) {
      stopSignal = signal
      firstAt = performance.now()
      grace.close()
    } else if (performance.now() - firstAt > SAME_STOP_MS) {
      app?.log.error({ signal }, `second ${signal} while draining: exiting at once`)
      process.exit(1)
    }
  }
  for (const signal of DRAIN_SIGNALS) process.on(signal, onSignal)
}

/**
 * close-with-grace's handler, registered as the server starts to listen. A signal lets the rest
 * of the start (listening, then a few statements) finish first, so that nothing is stopped half
 * made; an error does not wait. close-with-grace's 10 s delay bounds it all.
 */
async function shutDown({ err, signal = stopSignal }: { err?: Error; signal?: string }): Promise<void> {
  shuttingDown = true
  // close-with-grace's clock started with the signal, not with the end of the start.
  const requestsBy = performance.now() + GRACE_MS - LAST_MS
  if (err) {
    app!.log.error({ err: loggableError(err) }, 'shutting down after an error')
  } else {
    await starting.catch(() => undefined)
    app!.log.info({ signal, delay_ms: config!.shutdownDelayMs }, 'shutting down')
    return closeAll(config!.shutdownDelayMs, requestsBy)
  }
  await closeAll(0, requestsBy)
}

/** Whether `work` settles (either way) within `ms`. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController()
  try {
    return await Promise.race([work.then(() => true, () => true), sleep(Math.max(0, ms), false, { signal: timer.signal })])
  } finally {
    timer.abort()
  }
}

/**
 * Closes what the start has made so far, the HTTP server after `serveOnMs` of draining
 * (SHUTDOWN_DELAY_MS). The dispatcher's in-flight attempts finish (or are given back) within its
 * drain; a job's run in progress finishes too, before the pool closes. All of it by
 * `requestsBy`, so that the process exits 0 within close-with-grace's 10 s: a request still in
 * flight then (waiting on a database that went silent, or queued for a connection behind
 * statements that wait on a lock) is answered 503 as the pool is ended under it, and one that
 * waits on nothing of ours (a client still sending its body) is cut off. Each took the stop past
 * the 10 s, to an exit 1 with requests cut off (found by a fault review).
 */
async function closeAll(serveOnMs = 0, requestsBy = performance.now() + GRACE_MS - LAST_MS): Promise<void> {
  const background = Promise.all([dispatcher?.stop(), ...jobs.map((job) => job.stop())])
  if (app && serveOnMs > 0) {
    // The HTTP server serves on a while, /readyz 503 and every answer closing its connection,
    // before the port and the idle connections close: a load balancer that had just sent a request
    // on an idle keep-alive connection got a reset, not an answer (found by a multi-instance
    // review). The background work stops meanwhile: the dispatcher's drain runs alongside.
    app.drain()
    await sleep(serveOnMs)
  }
  const closing = Promise.all([stopOtherAddresses?.(), app?.close(), background])
  let ended: Promise<void> | undefined
  if (!(await settlesWithin(closing, requestsBy - performance.now()))) {
    app?.log.warn('requests still in flight at the end of the grace: ending the pool under them (503)')
    ended = database?.close(0)
    await ended
    if (!(await settlesWithin(closing, LAST_MS / 3))) {
      app?.log.warn('requests still in flight once the pool ended: closing their connections')
      app?.server.closeAllConnections()
    }
  }
  await closing
  await (ended ?? database?.close(Math.min(5_000, requestsBy - performance.now())))
}

const starting = start()
await starting
