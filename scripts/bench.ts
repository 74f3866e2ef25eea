// npm run bench: throughput, latency and memory of the real server on PostgreSQL, against a
// ceiling (a minimal Fastify + postgres.js server running the simplest correct SQL for each
// read) and a floor (pgbench running the API's own SQL alone), its webhook deliveries to a
// receiver that answers at once (scripts/bench/webhooks.ts), then on the embedded PGlite. See
// README, "Performance".
//
// Configuration (environment):
//   BENCH_DATABASE_URL  PostgreSQL to seed and use (created when missing)
//                       default postgres://postgres@127.0.0.1:5432/feedback_bench
//   BENCH_DURATION      seconds per measured run, default 7 (the default run fits in 10 minutes on 2 cores)
//   BENCH_WARMUP        seconds of warm-up before a scenario's first run on a server, default 2
//   BENCH_REPEAT        runs per scenario; the table shows medians, default 3
//   BENCH_CONNECTIONS   concurrent HTTP connections and pgbench clients, default 50
//   BENCH_PGLITE_DIR    the seeded PGlite data directory, default <tmp>/feedback-bench-pglite-v1
//   BENCH_ONLY          a regular expression: only scenarios whose name matches (development)
//   BENCH_SKIP_PGLITE   1 to skip the PGlite part
//   BENCH_HOOK_RATE     writes a second while write-to-delivery latency is measured, default 200
//   BENCH_CPU_PROF      a directory: the servers run under node --cpu-prof and leave their profiles there
import { mkdirSync, rmSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Request } from 'autocannon'
import { sql as dsql } from 'drizzle-orm'
import postgres from 'postgres'
import { openDatabase } from '../src/db/client.js'
import { newId } from '../src/domain/ids.js'
import { newWebhookSecret } from '../src/domain/secrets.js'
import { median, runHttp, runPgbench, type Measure } from './bench/load.js'
import { freePort, startServer, type Server } from './bench/procs.js'
import { benchSql, forPgbench, pgbenchEnrollTransaction, pgbenchInsertTester, simplestSql } from './bench/queries.js'
import { startBenchReceiver } from './bench/receiver.js'
import { API_KEY, ensureSeed, PROGRAM_ID, PROJECT_ID, SEED_NAME, type Exec, type SeedScale } from './bench/seed.js'
import { deliveryRate, subscribe, unsubscribe, writeToDelivery, type LatencyResult, type RateResult } from './bench/webhooks.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const env = process.env
const num = (name: string, fallback: number) => {
  const value = env[name] ? Number(env[name]) : fallback
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`)
  return value
}
const databaseUrl = env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/feedback_bench'
const seconds = num('BENCH_DURATION', 7)
const warmup = num('BENCH_WARMUP', 2)
const repeat = Math.round(num('BENCH_REPEAT', 3))
const connections = Math.round(num('BENCH_CONNECTIONS', 50))
const pgliteDir = env.BENCH_PGLITE_DIR || join(tmpdir(), 'feedback-bench-pglite-v1')
const only = env.BENCH_ONLY ? new RegExp(env.BENCH_ONLY, 'i') : undefined
const skipPglite = env.BENCH_SKIP_PGLITE === '1'
const hookRate = num('BENCH_HOOK_RATE', 200)
const cpuProfDir = env.BENCH_CPU_PROF
/** The config accepts at most 1 000 000 a minute: far above what two cores serve in one. */
const RATE_LIMIT = '1000000'

const PG_SCALE: SeedScale = { benchRows: 100_000, otherProjects: 90, otherRows: 900_000 }
const PGLITE_SCALE: SeedScale = { benchRows: 10_000, otherProjects: 0, otherRows: 0 }

const workDir = join(tmpdir(), 'feedback-bench')
mkdirSync(workDir, { recursive: true })
const t0 = Date.now()
const log = (line: string) => process.stderr.write(`[bench ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${line}\n`)
const mb = (bytes: number) => bytes / (1024 * 1024)

const started = new Set<Server>()
async function stopAll() {
  for (const server of started) await server.stop().catch(() => {})
  started.clear()
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the servers`)
    void stopAll().finally(() => process.exit(130))
  })
}

// ---------------------------------------------------------------------------------------------
// The PostgreSQL database: created, migrated, seeded once and reused.

async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url)
  const name = decodeURIComponent(target.pathname.slice(1))
  if (!name) throw new Error('BENCH_DATABASE_URL names no database')
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const client = postgres(admin.toString(), { max: 1, onnotice: () => {} })
  try {
    const rows = await client`select 1 from pg_database where datname = ${name}`
    if (rows.length === 0) {
      log(`creating database ${name}`)
      await client.unsafe(`create database "${name.replace(/"/g, '""')}"`)
    }
  } finally {
    await client.end({ timeout: 5 })
  }
}

async function preparePostgres(): Promise<{ entryId: string; seeded: boolean; seedSeconds: number }> {
  const began = Date.now()
  await ensureDatabase(databaseUrl)
  const database = await openDatabase({ databaseUrl })
  try {
    await database.migrate()
  } finally {
    await database.close()
  }
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const second = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const exec: Exec = async (text) => [...(await client.unsafe(text))] as Record<string, unknown>[]
    const other: Exec = async (text) => [...(await second.unsafe(text))] as Record<string, unknown>[]
    const seeded = await ensureSeed(exec, PG_SCALE, log, other)
    log(seeded ? 'seeded; vacuum analyze' : 'reusing the seed; vacuum analyze beta_testers')
    await exec(seeded ? 'vacuum analyze' : 'vacuum analyze beta_testers')
    // An entry from the middle of the project's history.
    const [row] = await client`select id from changelog_entries where project_id = ${PROJECT_ID}
                               order by published_at desc, id desc offset ${PG_SCALE.benchRows / 2} limit 1`
    return { entryId: row!.id as string, seeded, seedSeconds: (Date.now() - began) / 1000 }
  } finally {
    await client.end({ timeout: 5 })
    await second.end({ timeout: 5 })
  }
}

/** The PGlite data directory, seeded once (a marker file records which seed it holds). */
async function preparePglite(): Promise<{ entryId: string; seeded: boolean }> {
  const marker = join(pgliteDir, 'bench-seed.json')
  const want = JSON.stringify({ seed: SEED_NAME, scale: PGLITE_SCALE })
  // All rows belong to the project under test, so row 5000's id is the seed's formula.
  const entryId = `ch_${createHash('md5').update('ch-5000').digest('hex').slice(0, 21)}`
  if (existsSync(marker) && readFileSync(marker, 'utf8') === want) return { entryId, seeded: false }
  log(`seeding the PGlite data directory ${pgliteDir}`)
  rmSync(pgliteDir, { recursive: true, force: true })
  const database = await openDatabase({ dataDir: pgliteDir })
  try {
    await database.migrate()
    const exec: Exec = async (text) => {
      const result = (await database.db.execute(dsql.raw(text))) as unknown as { rows?: Record<string, unknown>[] }
      return result.rows ?? []
    }
    await ensureSeed(exec, PGLITE_SCALE, log)
    await exec('vacuum analyze')
  } finally {
    await database.close()
  }
  writeFileSync(marker, want)
  return { entryId, seeded: true }
}

// ---------------------------------------------------------------------------------------------
// Servers.

function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...env }
  for (const name of Object.keys(base)) {
    if (/^(DATABASE_URL|DATA_DIR|PORT|HOST|DB_|ADMIN_TOKEN|REDIS_URL|LOG_LEVEL|RATE_LIMIT|BENCH_)/.test(name)) delete base[name]
  }
  return { ...base, ...extra }
}

/** The node arguments of `npm start` (after its build step), so the bench runs the server exactly so. */
function startArgs(): string[] {
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  const match = /&& (?:exec )?node (.+)$/.exec(start)
  if (!match) throw new Error(`unexpected start script: ${start}`)
  return match[1]!.split(' ')
}

/** With BENCH_CPU_PROF, a server leaves its CPU profile there, named after it and its start. */
let profiles = 0
function profileArgs(name: string): string[] {
  if (!cpuProfDir) return []
  mkdirSync(cpuProfDir, { recursive: true })
  return ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, `--cpu-prof-name=${++profiles}-${name.replace(/\W+/g, '-')}.cpuprofile`]
}

async function startApi(name: string, dbEnv: Record<string, string>): Promise<Server> {
  const port = await freePort()
  const server = await startServer({
    name,
    args: [...profileArgs(name), ...startArgs()],
    cwd: root,
    env: serverEnv({ ...dbEnv, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: RATE_LIMIT }),
    port,
    logFile: join(workDir, `${name.replace(/\W+/g, '-')}.log`),
  })
  started.add(server)
  return server
}

async function startMinimal(sql: { getEntry: string; page: string }): Promise<Server> {
  const port = await freePort()
  const server = await startServer({
    name: 'minimal',
    args: [...profileArgs('minimal'), 'dist/scripts/bench/minimal-server.js'],
    cwd: root,
    env: serverEnv({
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      BENCH_PROJECT_ID: PROJECT_ID,
      BENCH_GET_SQL: sql.getEntry,
      BENCH_PAGE_SQL: sql.page,
    }),
    port,
    logFile: join(workDir, 'minimal.log'),
  })
  started.add(server)
  return server
}

async function stop(server: Server) {
  await server.stop()
  started.delete(server)
}

// ---------------------------------------------------------------------------------------------
// Scenarios.

type Target = 'api' | 'minimal' | 'pgbench' | 'pglite'
interface Scenario {
  key: string
  name: string
  target: Target
  /** HTTP scenarios */
  request?: () => Request
  /** pgbench scenarios */
  script?: string
  diagnostic?: boolean
  /** Around each of its runs (HTTP scenarios): what the scenario needs in place, and its removal. */
  setup?: () => Promise<void>
  teardown?: () => Promise<void>
}
interface Outcome {
  scenario: Scenario
  runs: Measure[]
  rssWindows: number[]
}

const auth = { authorization: `Bearer ${API_KEY}` }
const get = (path: string) => (): Request => ({ method: 'GET', path, headers: auth })
const runTag = Date.now().toString(36)
let enrolled = 0
const enroll = (): Request => ({
  method: 'POST',
  path: `/v1/beta/programs/${PROGRAM_ID}/testers`,
  headers: { ...auth, 'content-type': 'application/json' },
  setupRequest: (request) => ({ ...request, body: JSON.stringify({ email: `enroll-${runTag}-${++enrolled}@bench.test` }) }),
})

async function preflight(server: Server, scenario: Scenario): Promise<void> {
  const request = scenario.request!()
  const prepared = request.setupRequest ? request.setupRequest(request, {}) : request
  const response = await fetch(server.url + prepared.path, { method: prepared.method, headers: prepared.headers, body: prepared.body })
  const body = await response.text()
  if (response.status >= 300) throw new Error(`${server.name} ${scenario.name}: ${response.status} ${body.slice(0, 300)}`)
}

/**
 * Requests autocannon gave up on at the end of a run may still be queued for the server's pool;
 * the next run must not inherit them. /readyz goes through the pool: once it answers quickly,
 * the queue is empty.
 */
async function drain(server: Server): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const began = Date.now()
    const response = await fetch(`${server.url}/readyz`).catch(() => undefined)
    await response?.arrayBuffer()
    if (response?.ok && Date.now() - began < 100) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  log(`  ${server.name} still busy after 60 s`)
}

async function runHttpScenario(server: Server, scenario: Scenario, first: boolean): Promise<{ measure: Measure; rss: number }> {
  if (first) {
    await preflight(server, scenario)
    await runHttp({ url: server.url, connections, seconds: warmup, request: scenario.request!() })
    await drain(server)
  }
  const window = server.window()
  const measure = await runHttp({ url: server.url, connections, seconds, request: scenario.request!() })
  const { rss, cpuMs } = window()
  // Work the server did for these requests, whoever else used the cores meanwhile. Requests
  // autocannon left waiting are finished during the drain below and not counted: a slight overcount.
  if (measure.completed >= 50) measure.cpuPerRequest = cpuMs / measure.completed
  await drain(server)
  if (measure.failures) log(`  ${scenario.target} ${scenario.name}: ${measure.failures} failures (${measure.detail})`)
  return { measure, rss }
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!

const fmt = {
  rps: (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—'),
  ms: (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(1) : Math.round(v).toString()) : '—'),
  mb: (v: number) => (v > 0 ? `${Math.round(mb(v))} MB` : '—'),
  cpu: (v: number) => (Number.isFinite(v) ? v.toFixed(2) : '—'),
  ratio: (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : ''),
}

function summarise(outcome: Outcome) {
  return {
    rps: median(outcome.runs.map((m) => m.rps)),
    p50: median(outcome.runs.map((m) => m.p50)),
    p99: median(outcome.runs.map((m) => m.p99)),
    cpu: median(outcome.runs.map((m) => m.cpuPerRequest ?? NaN)),
    rss: Math.max(0, ...outcome.rssWindows),
    failures: outcome.runs.reduce((n, m) => n + m.failures, 0),
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  // The servers run as `npm start` runs them: compiled to dist/.
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' })
  const cores = availableParallelism()
  log(`${cores} cores, ${connections} connections, ${seconds} s × ${repeat} runs (warm-up ${warmup} s)`)
  const { entryId, seeded, seedSeconds } = await preparePostgres()
  const pg = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const [{ server_version: pgVersion }] = (await pg`show server_version`) as unknown as [{ server_version: string }]
  await pg.end({ timeout: 5 })
  log(`PostgreSQL ${pgVersion} ready in ${seedSeconds.toFixed(0)} s (${seeded ? 'seeded' : 'seed reused'})`)

  const sql = benchSql()
  const scripts = {
    get: join(workDir, 'get-entry.sql'),
    page: join(workDir, 'page.sql'),
    insert: join(workDir, 'insert-tester.sql'),
    enrollTx: join(workDir, 'enroll-transaction.sql'),
  }
  writeFileSync(scripts.get, `${forPgbench(sql.getEntry, ['project_id', 'entry_id'])};\n`)
  writeFileSync(scripts.page, `${forPgbench(sql.page, ['project_id', 'page_limit', 'page_offset'])};\n`)
  writeFileSync(scripts.insert, pgbenchInsertTester)
  writeFileSync(scripts.enrollTx, pgbenchEnrollTransaction)
  const pgbenchVariables = { project_id: PROJECT_ID, entry_id: entryId, page_limit: '21', page_offset: '0', program_id: PROGRAM_ID }

  // The webhook scenarios' receiver, and the endpoint subscribed to it while one of them runs.
  const receiver = await startBenchReceiver(join(root, 'dist/scripts/bench/receiver.js'))
  let apiUrl = ''
  const hookApi = () => ({ url: apiUrl, key: API_KEY })
  let subscribed: { id: string; at: number } | undefined
  const subscribeReceiver = async (events: string[]) => {
    await receiver.reset()
    subscribed = { id: await subscribe(hookApi(), receiver, events), at: Date.now() }
  }
  const unsubscribeReceiver = async () => {
    if (!subscribed) return
    await unsubscribe(hookApi(), subscribed.id)
    const seconds = (Date.now() - subscribed.at) / 1000
    const { events } = await receiver.count()
    log(`  (the endpoint got ${events} deliveries in its ${seconds.toFixed(0)} s, ${fmt.rps(events / seconds)} a second)`)
    subscribed = undefined
  }

  const lastPage = PG_SCALE.benchRows - 20
  // The cursor a client holds after reading the page before the last: the API's own, as a client
  // gets it (its format, the list's filters and the key's owner tag, is the server's business).
  let deepCursor = ''
  const scenarios: Scenario[] = [
    { key: 'get', name: 'GET changelog entry', target: 'api', request: get(`/v1/changelog/${entryId}`) },
    { key: 'get', name: 'GET changelog entry', target: 'minimal', request: get(`/v1/changelog/${entryId}`) },
    { key: 'get', name: 'GET changelog entry', target: 'pgbench', script: scripts.get },
    { key: 'program', name: 'GET beta program', target: 'api', request: get(`/v1/beta/programs/${PROGRAM_ID}`) },
    { key: 'list0', name: 'list changelog, offset 0', target: 'api', request: get('/v1/changelog?limit=20&offset=0') },
    { key: 'list0', name: 'list changelog, offset 0', target: 'minimal', request: get('/v1/changelog?limit=20&offset=0') },
    { key: 'list0', name: 'list changelog, offset 0', target: 'pgbench', script: scripts.page },
    { key: 'list10k', name: 'list changelog, offset 10 000', target: 'api', request: get('/v1/changelog?limit=20&offset=10000') },
    {
      key: 'list100k',
      name: `list changelog, offset ${lastPage.toLocaleString('en-US').replace(/,/g, ' ')} (last page of 100 000)`,
      target: 'api',
      request: get(`/v1/changelog?limit=20&offset=${lastPage}`),
    },
    {
      key: 'cursor100k',
      name: `list changelog, cursor at ${lastPage.toLocaleString('en-US').replace(/,/g, ' ')} (the same last page, by keyset)`,
      target: 'api',
      // Read when the scenario runs: the cursor is the API's, asked for once it listens (below).
      request: () => get(`/v1/changelog?limit=20&cursor=${deepCursor}`)(),
    },
    { key: 'testers', name: 'list testers, offset 0', target: 'api', request: get(`/v1/beta/programs/${PROGRAM_ID}/testers?limit=20&offset=0`) },
    { key: 'enroll', name: 'POST enroll tester (new email)', target: 'api', request: enroll },
    // Right after the same without an endpoint, on the same table, for the ratio.
    {
      key: 'enrollHook',
      name: 'POST enroll tester, a webhook endpoint subscribed (delivering meanwhile)',
      target: 'api',
      request: enroll,
      setup: () => subscribeReceiver(['beta_tester.enrolled']),
      teardown: unsubscribeReceiver,
    },
    { key: 'enroll', name: 'POST enroll tester (new email)', target: 'pgbench', script: scripts.insert },
    { key: 'enrollTx', name: 'enroll transaction (lock program + insert)', target: 'pgbench', script: scripts.enrollTx, diagnostic: true },
  ].filter((s) => !only || only.test(s.name) || only.test(s.key)) as Scenario[]

  const loadBefore = loadAverage()
  // Deliveries may reach the benchmark's receiver on 127.0.0.1.
  const api = await startApi('api-postgres', { DATABASE_URL: databaseUrl, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
  apiUrl = api.url
  if (scenarios.some((s) => s.key === 'cursor100k')) {
    const before = await fetch(`${api.url}/v1/changelog?limit=20&offset=${lastPage - 20}`, { headers: auth })
    const page = (await before.json()) as { pagination?: { next_cursor?: string | null } }
    if (!page.pagination?.next_cursor) throw new Error(`no next_cursor on the page before the last (${before.status})`)
    deepCursor = page.pagination.next_cursor
  }
  const apiStartRss = api.peakRss()
  log(`API on PostgreSQL listening after ${api.coldStartMs} ms (pid ${api.pid}), ${fmt.mb(apiStartRss)} at start-up`)
  const minimal = scenarios.some((s) => s.target === 'minimal') ? await startMinimal(simplestSql) : undefined
  if (minimal) log(`minimal server listening after ${minimal.coldStartMs} ms (pid ${minimal.pid})`)

  const outcomes = new Map<Scenario, Outcome>(scenarios.map((s) => [s, { scenario: s, runs: [], rssWindows: [] }]))
  for (let run = 1; run <= repeat; run++) {
    log(`run ${run}/${repeat}`)
    for (const scenario of scenarios) {
      const outcome = outcomes.get(scenario)!
      if (scenario.target === 'pgbench') {
        const measure = await runPgbench({
          databaseUrl,
          scriptFile: scenario.script!,
          clients: connections,
          threads: 2,
          seconds: Math.round(seconds),
          variables: pgbenchVariables,
          logDir: workDir,
        })
        outcome.runs.push(measure)
        if (measure.failures) log(`  pgbench ${scenario.name}: ${measure.failures} failed transactions`)
      } else {
        const server = scenario.target === 'api' ? api : minimal!
        await scenario.setup?.()
        try {
          const { measure, rss } = await runHttpScenario(server, scenario, run === 1)
          outcome.runs.push(measure)
          outcome.rssWindows.push(rss)
        } finally {
          await scenario.teardown?.()
        }
      }
      const last = outcome.runs.at(-1)!
      log(`  ${scenario.target.padEnd(7)} ${scenario.name}: ${fmt.rps(last.rps)} req/s, p50 ${fmt.ms(last.p50)} ms, p99 ${fmt.ms(last.p99)} ms, CPU ${fmt.cpu(last.cpuPerRequest ?? NaN)} ms/req`)
    }
  }
  const apiPeak = api.peakRss()
  const minimalPeak = minimal?.peakRss() ?? 0

  // -------------------------------------------------------------------------------------------
  // Webhook deliveries, on the same server: a backlog's delivery rate, and the time from a
  // write's acknowledgement to its delivery under a steady write load.
  const hookScenarios = [
    { key: 'hookRate', name: 'webhook deliveries a second (a backlog to one endpoint)', endpoints: 1 },
    // As many tenants as it takes for the instance's limit (32 in flight), not one endpoint's (8), to bound it.
    { key: 'hookRate4', name: 'webhook deliveries a second (a backlog to four tenants’ endpoints)', endpoints: 4 },
    { key: 'hookLatency', name: `acknowledged write → its webhook delivery, at ${hookRate} writes a second`, endpoints: 1 },
  ].filter((s) => !only || only.test(s.name) || only.test(s.key))
  const rateRuns: Record<number, (RateResult & { cpuPerDelivery: number })[]> = { 1: [], 4: [] }
  const latencyRuns: LatencyResult[] = []
  const backlog = Math.round(1000 * seconds)
  if (hookScenarios.length > 0) {
    const pgHooks = postgres(databaseUrl, { max: 1, onnotice: () => {} })
    // Endpoints of the project under test and of the seed's other projects (which have no key the
    // API takes), written as the API would, and deleted with their deliveries afterwards.
    const projects = [PROJECT_ID, ...[1, 2, 3].map((n) => `prj_other${String(n).padStart(16, '0')}`)]
    const createEndpoints = async (n: number) => {
      const endpoints = projects.slice(0, n).map((projectId) => ({ id: newId('we'), projectId }))
      for (const e of endpoints) {
        await pgHooks`insert into webhook_endpoints (id, project_id, url, secret, events) values (${e.id}, ${e.projectId}, ${receiver.url}, ${newWebhookSecret()}, ${['webhook.test']})`
      }
      return endpoints
    }
    const deleteEndpoints = async (endpoints: { id: string }[]) => {
      await pgHooks`delete from webhook_endpoints where id in ${pgHooks(endpoints.map((e) => e.id))}`
    }
    // `count` events and deliveries, dealt to the endpoints in turn, in one statement.
    const writeBacklog = (endpoints: { id: string; projectId: string }[]) => async (count: number) => {
      const tag = `${runTag}-${Date.now()}`
      const pick = (key: 'id' | 'projectId') => `(array[${endpoints.map((e) => `'${e[key]}'`).join(', ')}])[1 + g % ${endpoints.length}]`
      await pgHooks.unsafe(`
        with event as (
          insert into events (id, project_id, type, data)
          select 'evt_' || substr(md5('${tag}-' || g), 1, 21), ${pick('projectId')}, 'webhook.test', '{"id":"' || ${pick('id')} || '","n":' || g || '}'
          from generate_series(1, ${count}) g
          returning id, project_id, created_at, data
        )
        insert into webhook_deliveries (id, project_id, endpoint_id, event_id, event_type, next_attempt_at, created_at)
        select 'wd_' || substr(md5('wd-' || id), 1, 21), project_id, (data::json)->>'id', id, 'webhook.test', created_at, created_at from event`)
    }
    try {
      for (let run = 1; run <= repeat; run++) {
        log(`webhook run ${run}/${repeat}`)
        for (const scenario of hookScenarios) {
          if (scenario.key !== 'hookLatency') {
            const endpoints = await createEndpoints(scenario.endpoints)
            const window = api.window()
            const result = await deliveryRate({ receiver, count: backlog, write: writeBacklog(endpoints), timeoutMs: 180_000 })
            const { cpuMs } = window()
            await deleteEndpoints(endpoints)
            rateRuns[scenario.endpoints]!.push({ ...result, cpuPerDelivery: cpuMs / result.delivered })
            log(`  ${scenario.name}: ${fmt.rps(result.perSecond)}/s, ${result.delivered} of ${result.expected} delivered, server CPU ${fmt.cpu(cpuMs / result.delivered)} ms a delivery`)
          } else {
            await subscribeReceiver(['beta_tester.enrolled'])
            const result = await writeToDelivery({ api: hookApi(), receiver, programId: PROGRAM_ID, rate: hookRate, seconds, waitMs: 60_000, tag: `${runTag}-${run}` })
            await unsubscribeReceiver()
            latencyRuns.push(result)
            log(
              `  ${scenario.name}: p50 ${fmt.ms(result.p50)} ms, p99 ${fmt.ms(result.p99)} ms, max ${fmt.ms(result.max)} ms; ` +
                `${fmt.rps(result.writesPerSecond)} writes/s acknowledged (p99 ${fmt.ms(result.writeP99)} ms), ${result.failedWrites} failed, ${result.undelivered} undelivered`,
            )
          }
          await drain(api)
        }
      }
    } finally {
      await unsubscribeReceiver().catch(() => {})
      await pgHooks.end({ timeout: 5 })
    }
  }
  await receiver.close()
  await stop(api)
  if (minimal) await stop(minimal)
  rmSync(api.logFile, { force: true })

  // -------------------------------------------------------------------------------------------
  // PGlite: the embedded default, on 10 000 rows, the GETs only.
  const pgliteOutcomes: Outcome[] = []
  const coldStarts: number[] = []
  let pglitePeak = 0
  let pgliteStartRss = 0
  if (!skipPglite) {
    const { entryId: pgliteEntry, seeded: pgliteSeeded } = await preparePglite()
    log(`PGlite data directory ${pgliteSeeded ? 'seeded' : 'reused'}: ${pgliteDir}`)
    const pgliteScenarios: Scenario[] = [
      { key: 'get', name: 'GET changelog entry', target: 'pglite', request: get(`/v1/changelog/${pgliteEntry}`) },
      { key: 'program', name: 'GET beta program', target: 'pglite', request: get(`/v1/beta/programs/${PROGRAM_ID}`) },
      { key: 'list0', name: 'list changelog, offset 0', target: 'pglite', request: get('/v1/changelog?limit=20&offset=0') },
      { key: 'testers', name: 'list testers, offset 0', target: 'pglite', request: get(`/v1/beta/programs/${PROGRAM_ID}/testers?limit=20&offset=0`) },
    ].filter((s) => !only || only.test(s.name) || only.test(s.key)) as Scenario[]

    const pglite = await startApi('api-pglite', { DATA_DIR: pgliteDir })
    coldStarts.push(pglite.coldStartMs)
    pgliteStartRss = pglite.peakRss()
    log(`API on PGlite listening after ${pglite.coldStartMs} ms (pid ${pglite.pid}), ${fmt.mb(pgliteStartRss)} at start-up`)
    for (const s of pgliteScenarios) pgliteOutcomes.push({ scenario: s, runs: [], rssWindows: [] })
    for (let run = 1; run <= repeat; run++) {
      log(`PGlite run ${run}/${repeat}`)
      for (const outcome of pgliteOutcomes) {
        const { measure, rss } = await runHttpScenario(pglite, outcome.scenario, run === 1)
        outcome.runs.push(measure)
        outcome.rssWindows.push(rss)
        log(`  pglite  ${outcome.scenario.name}: ${fmt.rps(measure.rps)} req/s, p50 ${fmt.ms(measure.p50)} ms, p99 ${fmt.ms(measure.p99)} ms, CPU ${fmt.cpu(measure.cpuPerRequest ?? NaN)} ms/req`)
      }
    }
    pglitePeak = pglite.peakRss()
    await stop(pglite)
    rmSync(pglite.logFile, { force: true })
    // More cold starts on the same (now cached) data directory, for a median.
    for (let i = 1; i < repeat; i++) {
      const again = await startApi('api-pglite', { DATA_DIR: pgliteDir })
      coldStarts.push(again.coldStartMs)
      pglitePeak = Math.max(pglitePeak, again.peakRss())
      await stop(again)
      rmSync(again.logFile, { force: true })
    }
    log(`PGlite cold starts: ${coldStarts.join(', ')} ms`)
  }

  // -------------------------------------------------------------------------------------------
  // Report.
  const find = (key: string, target: Target) => {
    const outcome = [...outcomes.values(), ...pgliteOutcomes].find((o) => o.scenario.key === key && o.scenario.target === target)
    return outcome ? summarise(outcome) : undefined
  }
  const label: Record<Target, string> = { api: 'API (postgres.js)', minimal: 'minimal server', pgbench: 'pgbench', pglite: 'API (PGlite)' }
  const peakOf: Record<Target, number> = { api: apiPeak, minimal: minimalPeak, pgbench: 0, pglite: pglitePeak }

  const rows: string[] = [
    '| scenario | target | req/s | p50 ms | p99 ms | server CPU ms/req | server peak RSS | API/minimal | API/pgbench |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|',
  ]
  let previousKey: string | undefined
  for (const scenario of scenarios) {
    const s = summarise(outcomes.get(scenario)!)
    const first = scenario.key !== previousKey
    previousKey = scenario.key
    const isApi = scenario.target === 'api'
    const m = isApi ? find(scenario.key, 'minimal') : undefined
    const b = isApi ? find(scenario.key, 'pgbench') : undefined
    rows.push(
      `| ${first ? scenario.name : ''}${scenario.diagnostic ? ' *(diagnostic)*' : ''} | ${label[scenario.target]} | ${fmt.rps(s.rps)} | ${fmt.ms(s.p50)} | ${fmt.ms(s.p99)} | ${fmt.cpu(s.cpu)} | ` +
        `${scenario.target === 'pgbench' ? '—' : fmt.mb(s.rss)} | ${m ? fmt.ratio(s.rps / m.rps) : ''} | ${b ? fmt.ratio(s.rps / b.rps) : ''} |` +
        (s.failures ? ` ⚠ ${s.failures} failed` : ''),
    )
  }

  const pgRows: string[] = []
  if (pgliteOutcomes.length) {
    pgRows.push(
      '| scenario (PGlite, 10 000 rows) | req/s | p50 ms | p99 ms | server CPU ms/req | server peak RSS | PGlite/postgres.js |',
      '|---|--:|--:|--:|--:|--:|--:|',
    )
    for (const outcome of pgliteOutcomes) {
      const s = summarise(outcome)
      // Point reads and the first page do not depend on the row count; the other lists do.
      const onPg = ['get', 'program', 'list0'].includes(outcome.scenario.key) ? find(outcome.scenario.key, 'api') : undefined
      pgRows.push(
        `| ${outcome.scenario.name} | ${fmt.rps(s.rps)} | ${fmt.ms(s.p50)} | ${fmt.ms(s.p99)} | ${fmt.cpu(s.cpu)} | ${fmt.mb(s.rss)} | ${onPg ? fmt.ratio(s.rps / onPg.rps) : ''} |` +
          (s.failures ? ` ⚠ ${s.failures} failed` : ''),
      )
    }
  }

  const hookRows: string[] = []
  if (rateRuns[1]!.length || rateRuns[4]!.length || latencyRuns.length) {
    const medianOf = <T>(runs: T[], f: (r: T) => number) => median(runs.map(f))
    hookRows.push('| webhook scenario (PostgreSQL) | measured | runs | target |', '|---|--:|---|---|')
    for (const [endpoints, runs] of Object.entries(rateRuns)) {
      if (runs.length === 0) continue
      const to = endpoints === '1' ? 'one endpoint (8 attempts at a time)' : `${endpoints} endpoints of ${endpoints} projects (32 at a time, the instance's limit)`
      hookRows.push(
        `| deliveries a second: a backlog of ${fmt.rps(backlog)} to ${to}, receiver answering 204 at once | ${fmt.rps(medianOf(runs, (r) => r.perSecond))}/s ` +
          `(server CPU ${fmt.cpu(medianOf(runs, (r) => r.cpuPerDelivery))} ms a delivery) | ${runs.map((r) => fmt.rps(r.perSecond)).join(', ')} | ≥ 1,000/s |` +
          (runs.some((r) => r.delivered < r.expected || r.duplicates > 0) ? ` ⚠ ${runs.map((r) => `${r.expected - r.delivered} undelivered, ${r.duplicates} twice`).join('; ')}` : ''),
      )
    }
    if (latencyRuns.length) {
      hookRows.push(
        `| acknowledged enrollment → its delivery, ${hookRate} writes a second for ${seconds} s: p50 / p99 | ${fmt.ms(medianOf(latencyRuns, (r) => r.p50))} / ${fmt.ms(medianOf(latencyRuns, (r) => r.p99))} ms ` +
          `(max ${fmt.ms(medianOf(latencyRuns, (r) => r.max))}) | ${latencyRuns.map((r) => `${fmt.ms(r.p50)} / ${fmt.ms(r.p99)}`).join(', ')} | p99 < 2,000 ms |` +
          (latencyRuns.some((r) => r.undelivered || r.failedWrites) ? ` ⚠ ${latencyRuns.map((r) => `${r.undelivered} undelivered, ${r.failedWrites} failed writes`).join('; ')}` : ''),
      )
    }
    const withHook = find('enrollHook', 'api')
    const without = find('enroll', 'api')
    if (withHook && without) {
      hookRows.push(`| enrollment req/s with an endpoint subscribed / without | ${fmt.ratio(withHook.rps / without.rps)} (${fmt.rps(withHook.rps)} / ${fmt.rps(without.rps)}) | medians of ${repeat} | ≥ 0.90× |`)
    }
  }

  // Targets.
  const checks: string[] = []
  const check = (name: string, value: number | undefined, goal: number, cmp: '≥' | '≤', show: (v: number) => string) => {
    if (value === undefined || !Number.isFinite(value)) return
    const ok = cmp === '≥' ? value >= goal : value <= goal
    checks.push(`- ${ok ? 'met ' : 'MISSED'} ${name}: ${show(value)} (target ${cmp} ${show(goal)})`)
  }
  const x = (v: number) => `${v.toFixed(2)}×`
  const r = (a?: { rps: number }, b?: { rps: number }) => (a && b ? a.rps / b.rps : undefined)
  const p = (a?: { p99: number }, b?: { p99: number }) => (a && b ? a.p99 / b.p99 : undefined)
  check('GET by id vs minimal', r(find('get', 'api'), find('get', 'minimal')), 0.8, '≥', x)
  check('list offset 0 vs minimal', r(find('list0', 'api'), find('list0', 'minimal')), 0.8, '≥', x)
  check('GET by id p99 vs minimal p99', p(find('get', 'api'), find('get', 'minimal')), 2, '≤', x)
  check('list offset 0 p99 vs minimal p99', p(find('list0', 'api'), find('list0', 'minimal')), 2, '≤', x)
  check('list offset 10 000 vs offset 0', r(find('list10k', 'api'), find('list0', 'api')), 0.5, '≥', x)
  check('list at the last page of 100 000 vs offset 0', r(find('list100k', 'api'), find('list0', 'api')), 0.5, '≥', x)
  check('the same page by cursor vs offset 0', r(find('cursor100k', 'api'), find('list0', 'api')), 0.5, '≥', x)
  check('enrollment vs pgbench insert', r(find('enroll', 'api'), find('enroll', 'pgbench')), 0.7, '≥', x)
  check('enrollment with a webhook endpoint subscribed vs without', r(find('enrollHook', 'api'), find('enroll', 'api')), 0.9, '≥', x)
  for (const [endpoints, runs] of Object.entries(rateRuns)) {
    if (runs.length) check(`webhook deliveries a second, to ${endpoints === '1' ? 'one endpoint' : `${endpoints} tenants' endpoints`}`, median(runs.map((r) => r.perSecond)), 1000, '≥', (v) => `${fmt.rps(v)}/s`)
  }
  if (latencyRuns.length) check(`write → delivery p99 at ${hookRate} writes/s`, median(latencyRuns.map((r) => r.p99)), 2000, '≤', (v) => `${fmt.ms(v)} ms`)
  check('API peak RSS on PostgreSQL', apiPeak ? mb(apiPeak) : undefined, 200, '≤', (v) => `${Math.round(v)} MB`)
  if (!skipPglite) {
    check('PGlite peak RSS', pglitePeak ? mb(pglitePeak) : undefined, 400, '≤', (v) => `${Math.round(v)} MB`)
    check('PGlite cold start (median)', coldStarts.length ? median(coldStarts) / 1000 : undefined, 3, '≤', (v) => `${v.toFixed(2)} s`)
    check('PGlite GET by id vs postgres.js', r(find('get', 'pglite'), find('get', 'api')), 0.5, '≥', x)
  }

  const elapsed = (Date.now() - t0) / 1000
  const report = [
    `Machine: ${cores} cores, PostgreSQL ${pgVersion}, Node ${process.version}. ${connections} connections (pgbench: ${connections} clients, 2 threads), ` +
      `${seconds} s per run after ${warmup} s of warm-up, medians of ${repeat} runs. Server peak RSS: the highest VmRSS sampled during the scenario's runs; ` +
      `the API's overall peak (VmHWM) was ${fmt.mb(apiPeak)} (${fmt.mb(apiStartRss)} once listening), the minimal server's ${fmt.mb(minimalPeak)}. ` +
      `Load average (1 min) ${loadBefore} before the PostgreSQL runs, ${loadAverage()} at the end: other processes share the cores.`,
    '',
    ...rows,
    '',
    ...(hookRows.length ? [...hookRows, ''] : []),
    ...(pgRows.length
      ? [
          ...pgRows,
          '',
          `PGlite: peak RSS ${fmt.mb(pglitePeak)} (${fmt.mb(pgliteStartRss)} once listening), cold start (spawn → listening) median ` +
            `${(median(coldStarts) / 1000).toFixed(2)} s of ${coldStarts.map((c) => (c / 1000).toFixed(2)).join(', ')} s.`,
          '',
        ]
      : []),
    'Targets:',
    ...checks,
    '',
    `Run took ${Math.floor(elapsed / 60)} min ${Math.round(elapsed % 60)} s (${seeded ? 'including seeding' : 'seed reused'}).`,
  ].join('\n')
  process.stdout.write(`\n${report}\n`)
  const out = join(workDir, `results-${new Date().toISOString().replace(/[:.]/g, '-')}.md`)
  writeFileSync(out, `${report}\n`)
  log(`report written to ${out}`)
}

try {
  await main()
} catch (error) {
  await stopAll()
  throw error
}
