// A database that goes away mid-traffic, and one that accepts TCP and never answers: the API
// answers 503 unavailable with Retry-After (never a 500, never a hang, never a crash), recovers
// by itself when the database is back, and loses no write it acknowledged.
// The kill tests depend on the postgres.js patch in patches/ (porsager/postgres #1119: a query
// killed mid-result left the next query on that connection its rows or its error, a wrong 401
// or 500 in about one run in fifteen; and a query handed to a connection between its socket's
// error and close events waited forever); the silent-database tests on the gate in
// src/db/gate.ts, which fails fast after a failed connect and lets one request probe.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { COOL_DOWN_MS } from '../../src/db/gate.js'
import { call, type CallOptions } from '../helpers/app.js'
import { ManualClock, settle, underWay } from '../helpers/clock.js'
import { specProblems } from '../helpers/spec-check.js'
import { DATABASE_URL, httpRequest, pgApp, proProject, startServer, uniqueName, type HttpOutcome } from './fixtures/pg.js'

/**
 * How long a request of the kill tests may take before it counts as hung, and how long they wait
 * for the service to recover: many times the deadlines involved (5 s for a statement and for a
 * new connection), so that a busy machine's slowness is never taken for a hang. When each
 * deadline answers is asserted on a hand clock (the silent-database tests below, and
 * faults.test.ts); these tests kill real backends under load, which a frozen clock cannot drive.
 */
const HUNG_MS = 30_000
const RECOVERY_GUARD_MS = 60_000
// Room for the guards to fail by their own assertions: a kill test's worst case is a hung answer,
// a recovery that never comes and a hung check after it.
t.setTimeout(300_000)

interface Observed {
  label: string
  status: number | 'no answer'
  ms: number
  code?: string
  retryAfter?: string
  /** Where the response departs from openapi.yaml (the check call() makes). */
  offSpec: string[]
}

interface Sent {
  status: number
  headers: Record<string, unknown>
  raw: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any
}

/**
 * What call() does (inject, then check the response against openapi.yaml), timed, and giving up
 * after `limitMs` instead of hanging. Nothing is asserted here: a request that answers after
 * its test has ended must not fail some other test, so the findings are returned instead.
 */
async function timedCall(app: FastifyInstance, label: string, options: CallOptions, limitMs: number) {
  const method = options.method ?? 'GET'
  const headers: Record<string, string> = { ...(options.key ? { authorization: `Bearer ${options.key}` } : {}), ...options.headers }
  let payload: string | undefined
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json'
    payload = JSON.stringify(options.body)
  }
  const started = performance.now()
  const giveUp = new AbortController()
  const res = await Promise.race([
    app.inject({ method, url: options.url, headers, payload }),
    sleep(limitMs + 500, undefined, { signal: giveUp.signal }).then(
      () => undefined,
      () => undefined,
    ),
  ])
  giveUp.abort()
  const ms = performance.now() - started
  if (!res) return { observed: { label, status: 'no answer', ms, offSpec: [] } as Observed, result: undefined }
  let json: unknown
  try {
    json = res.body ? JSON.parse(res.body) : undefined
  } catch {
    json = undefined
  }
  const result: Sent = { status: res.statusCode, headers: res.headers, raw: res.body, json }
  const observed: Observed = {
    label,
    status: res.statusCode,
    ms,
    code: result.json?.code,
    retryAfter: res.headers['retry-after'] as string | undefined,
    offSpec: specProblems(method, options.url, { statusCode: res.statusCode, headers: res.headers, body: res.body }),
  }
  return { observed, result }
}

const offSpec = (observed: Observed[]) => [...new Set(observed.flatMap((o) => o.offSpec.map((p) => `${o.label} ${o.status}: ${p}`)))]

/** A connection of its own, tagged differently, that kills only the connections tagged `victim`. */
function killer(t: Test, victim: string) {
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {}, connection: { application_name: uniqueName('killer') } })
  t.teardown(() => sql.end({ timeout: 5 }))
  const state = { killing: true, killed: 0 }
  const run = async (ms: number) => {
    const until = Date.now() + ms
    while (Date.now() < until) {
      const rows = await sql`select pg_terminate_backend(pid) as killed from pg_stat_activity where application_name = ${victim}`
      state.killed += rows.filter((r) => r.killed).length
      await sleep(25)
    }
    state.killing = false
  }
  return { sql, state, run }
}

/**
 * Records unhandled promise rejections instead of letting tap fail whichever subtest is
 * running. In the real server such a rejection reaches close-with-grace, which shuts the
 * process down (exit 1): a test must report it as what it is, a crash.
 */
function captureUnhandledRejections() {
  const saved = process.listeners('unhandledRejection')
  process.removeAllListeners('unhandledRejection')
  const caught: string[] = []
  const listener = (reason: unknown) => {
    const e = reason as { code?: string; message?: string; query?: string }
    caught.push(`${e?.code ?? ''} ${e?.message ?? String(reason)}${e?.query ? ` (query: ${e.query.replace(/\s+/g, ' ').trim()})` : ''}`)
  }
  process.on('unhandledRejection', listener)
  return {
    caught,
    restore() {
      process.off('unhandledRejection', listener)
      for (const l of saved) process.on('unhandledRejection', l)
    },
  }
}

const summary = (observed: { label: string; status: unknown }[]) => {
  const counts = new Map<string, number>()
  for (const o of observed) counts.set(`${o.label} ${o.status}`, (counts.get(`${o.label} ${o.status}`) ?? 0) + 1)
  return [...counts].map(([k, v]) => `${k} ×${v}`).join(', ')
}

t.test('connections killed mid-traffic: 503 or success, never 500; recovery without a rebuild; acknowledged writes kept', async (t) => {
  const { app, handle, applicationName } = await pgApp(t, { label: 'outage', poolSize: 4, connectTimeout: 5 })
  const project = await proProject(handle.db, 'Outage test')
  const acknowledged = new Map<string, string>()
  let serial = 0
  const write = async (label: string) => {
    const title = `outage ${process.pid} ${++serial}`
    const sent = await timedCall(app, label, { method: 'POST', url: '/v1/changelog', key: project.key, body: { title, body: 'kept' } }, HUNG_MS)
    if (sent.result?.status === 201) acknowledged.set(sent.result.json.data.id, title)
    return sent
  }

  for (let i = 0; i < 3; i++) {
    const { observed } = await write('write before')
    t.equal(observed.status, 201, 'a write before the outage succeeds')
  }
  const knownId = [...acknowledged.keys()][0]!
  const requests: (() => Promise<{ observed: Observed }>)[] = [
    () => timedCall(app, 'GET /readyz', { url: '/readyz' }, HUNG_MS),
    () => timedCall(app, 'GET /v1/changelog', { url: '/v1/changelog', key: project.key }, HUNG_MS),
    () => write('POST /v1/changelog'),
    () => timedCall(app, 'GET /v1/changelog/{id}', { url: `/v1/changelog/${knownId}`, key: project.key }, HUNG_MS),
    () => timedCall(app, 'GET /v1/beta/programs', { url: '/v1/beta/programs', key: project.key }, HUNG_MS),
  ]

  const kill = killer(t, applicationName)
  const observed: Observed[] = []
  const unhandled = captureUnhandledRejections()
  try {
    const worker = async (w: number) => {
      for (let n = w; kill.state.killing; n++) {
        observed.push((await requests[n % requests.length]!()).observed)
        await sleep(15)
      }
    }
    await Promise.all([kill.run(2000), ...Array.from({ length: 6 }, (_, w) => worker(w))])
    // A rejection from a connection killed at the very end surfaces a moment later.
    await sleep(200)
  } finally {
    unhandled.restore()
  }

  t.ok(kill.state.killed > 0, `the app's connections were killed (${kill.state.killed} backends terminated)`)
  t.comment(`during the outage: ${summary(observed)}`)
  t.same(
    unhandled.caught,
    [],
    'no unhandled promise rejection while connections are killed (in the real server one shuts the process down, see the next test)',
  )
  const bad = observed.filter((o) => !(typeof o.status === 'number' && ((o.status >= 200 && o.status < 300) || o.status === 503)))
  t.same(bad, [], 'every answer during the outage is a success or a 503: never a 500, a 401 for a valid key, or no answer')
  const bad503 = observed.filter((o) => o.status === 503 && !(o.code === 'unavailable' && Number(o.retryAfter) >= 1))
  t.same(bad503, [], 'every 503 is `unavailable` with Retry-After')
  t.same(offSpec(observed), [], 'every answer matches openapi.yaml')
  t.comment(`slowest answer ${Math.round(Math.max(...observed.map((o) => o.ms)))} ms of ${observed.length} requests`)
  t.ok(observed.some((o) => o.status === 503), 'the outage was visible to clients (at least one 503)')
  // Whether a /readyz met a killed connection is chance: said, not asserted (readiness.test.ts
  // and faults.test.ts hold /readyz to its 503).
  t.comment(observed.some((o) => o.label === 'GET /readyz' && o.status === 503) ? '/readyz answered 503 while connections were being killed' : '/readyz did not happen to hit a killed connection in this run')

  // Recovery, on the same app (no rebuild): a burst of more requests than the pool has
  // connections, so every pooled connection is used, answers 2xx throughout.
  const stoppedAt = performance.now()
  let recoveredAfter: number | undefined
  let lastBurst: Observed[] = []
  while (recoveredAfter === undefined && performance.now() - stoppedAt < RECOVERY_GUARD_MS) {
    lastBurst = (await Promise.all(Array.from({ length: 12 }, (_, i) => requests[i % requests.length]!()))).map((b) => b.observed)
    if (lastBurst.every((o) => typeof o.status === 'number' && o.status < 300)) recoveredAfter = performance.now() - stoppedAt
    else await sleep(200)
  }
  t.ok(
    recoveredAfter !== undefined,
    `requests succeed again on the same app (${recoveredAfter === undefined ? `not within ${RECOVERY_GUARD_MS / 1000} s; last burst: ${summary(lastBurst)}` : `after ${Math.round(recoveredAfter)} ms`})`,
  )
  t.same(offSpec(lastBurst), [], 'the answers after recovery match openapi.yaml')

  t.ok(acknowledged.size > 3, `${acknowledged.size} writes were acknowledged with 201`)
  const missing: string[] = []
  for (const [id, title] of acknowledged) {
    const got = await call(t, app, { url: `/v1/changelog/${id}`, key: project.key })
    if (got.status !== 200 || got.json.data.title !== title) missing.push(`${id} (${got.status})`)
  }
  t.same(missing, [], 'every write acknowledged with 201 is still there, as written')
  const [row] = await kill.sql`select count(*)::int as n from changelog_entries where project_id = ${project.id}`
  t.ok(row!.n >= acknowledged.size, `the database holds at least the ${acknowledged.size} acknowledged entries (${row!.n})`)
})

t.test('the real server keeps running while its connections are killed, then serves again', async (t) => {
  const applicationName = uniqueName('server')
  const adminToken = `admin-${applicationName}`
  // postgres.js takes its application_name from PGAPPNAME: every connection of the child is tagged.
  const server = await startServer({ PGAPPNAME: applicationName, ADMIN_TOKEN: adminToken, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '1000000' })
  t.teardown(() => {
    if (server.running()) server.child.kill('SIGKILL')
  })
  const created = await httpRequest(`${server.base}/admin/v1/projects`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}` },
    body: { name: 'Outage server test', plan: 'pro', beta_enabled: true },
  })
  t.equal(created.status, 201, 'a project through the operator API')
  const key = JSON.parse(created.body!).api_key as string

  const checked = async (label: string, path: string, auth: boolean) => {
    const outcome = await httpRequest(`${server.base}${path}`, { headers: auth ? { authorization: `Bearer ${key}` } : {}, timeoutMs: HUNG_MS })
    if (outcome.kind === 'complete') {
      t.same(specProblems('GET', path, { statusCode: outcome.status!, headers: outcome.headers!, body: outcome.body! }), [], `${label} ${outcome.status} matches openapi.yaml`)
    }
    return { label, outcome }
  }
  const kill = killer(t, applicationName)
  const seen: { label: string; outcome: HttpOutcome }[] = []
  const worker = async (w: number) => {
    for (let n = w; kill.state.killing; n++) {
      seen.push(await (n % 2 ? checked('GET /readyz', '/readyz', false) : checked('GET /v1/changelog', '/v1/changelog', true)))
      await sleep(15)
    }
  }
  await Promise.all([kill.run(2000), ...Array.from({ length: 6 }, (_, w) => worker(w))])
  await sleep(300)
  t.comment(`during the outage: ${summary(seen.map((s) => ({ label: s.label, status: s.outcome.kind === 'complete' ? s.outcome.status : `${s.outcome.kind} ${s.outcome.error}` })))}`)
  t.ok(kill.state.killed > 0, `the server's connections were killed (${kill.state.killed})`)
  const health = await httpRequest(`${server.base}/healthz`, { timeoutMs: HUNG_MS })
  const stillUp = server.running() && health.status === 200
  t.ok(stillUp, 'the server process is still up and answering /healthz after its connections were killed')
  if (!stillUp) {
    const reason = server.output().split('\n').find((line) => line.includes('shutting down after an error'))
    t.comment(`the server is ${server.running() ? 'shutting down' : 'gone'}: ${reason?.slice(0, 600) ?? server.output().slice(-1500)}`)
  }
  const unanswered = seen.filter(
    (s) => !(s.outcome.kind === 'complete' && (s.outcome.status === 503 || (s.outcome.status! >= 200 && s.outcome.status! < 300))),
  )
  t.equal(
    summary(unanswered.map((s) => ({ label: s.label, status: `${s.outcome.kind} ${s.outcome.status ?? s.outcome.error}` }))),
    '',
    'every request got a whole answer, 2xx or 503',
  )
  if (!stillUp) return

  let recovered = false
  const stoppedAt = Date.now()
  while (!recovered && Date.now() - stoppedAt < RECOVERY_GUARD_MS) {
    const ready = await httpRequest(`${server.base}/readyz`, { timeoutMs: HUNG_MS })
    recovered = ready.status === 200
    if (!recovered) await sleep(100)
  }
  t.ok(recovered, 'the server serves /readyz again')
  const exit = server.exited
  server.child.kill('SIGTERM')
  t.equal(await exit, 0, 'and still drains and exits 0 on SIGTERM')
})

/**
 * A TCP server that accepts connections and never says a word, until `answer()`: from then on
 * it relays each new connection to the real PostgreSQL of DATABASE_URL (a database that comes
 * back). Connections accepted while silent stay silent.
 */
async function blackHole(t: Test) {
  const sockets = new Set<Socket>()
  let accepted = 0
  let answering = false
  const real = new URL(DATABASE_URL)
  const server = createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
    if (!answering) return
    const upstream = connect(Number(real.port || 5432), real.hostname)
    sockets.add(upstream)
    upstream.on('error', () => socket.destroy())
    upstream.on('close', () => (sockets.delete(upstream), socket.destroy()))
    socket.on('close', () => upstream.destroy())
    socket.pipe(upstream).pipe(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  })
  return { port: (server.address() as AddressInfo).port, accepted: () => accepted, answer: () => (answering = true) }
}

const CONNECT_TIMEOUT = 2
/** A safety net for a request that never answers: far beyond any deadline the hand clock runs. */
const NEVER_MS = 60_000
const someKey = `fbk_${'b'.repeat(40)}`
const silentCases: [string, CallOptions][] = [
  ['GET /readyz', { url: '/readyz' }],
  ['GET /v1/changelog (authenticated)', { url: '/v1/changelog', key: someKey }],
  ['POST /v1/changelog (authenticated)', { method: 'POST', url: '/v1/changelog', key: someKey, body: { title: 'never stored' } }],
]

/**
 * An app whose database is a black hole; its URL names the real database, for when it answers.
 * The connect gate runs on a hand clock (test/helpers/clock.ts): a connection's startup deadline,
 * the cool-down after a failure and the readiness check's deadline pass when the test advances
 * it, so what is asserted is when an answer comes relative to the deadlines, never how fast.
 */
async function silentDatabaseApp(t: Test, poolSize: number) {
  const hole = await blackHole(t)
  const url = new URL(DATABASE_URL)
  url.hostname = '127.0.0.1'
  url.port = String(hole.port)
  const clock = new ManualClock()
  const database = await openDatabase({ databaseUrl: url.href, poolSize, connectTimeout: CONNECT_TIMEOUT, clock })
  const app = await buildApp({ ...defaults, logLevel: 'silent' }, database)
  await app.ready()
  t.teardown(async () => {
    await app.close()
    await database.close()
  })
  return { app, hole, clock }
}

/** Requests sent together, each noting whether it has been answered yet. */
const sendAll = (app: FastifyInstance, cases: [string, CallOptions][]) =>
  underWay(cases.map(([label, options]) => timedCall(app, label, options, NEVER_MS)))

t.test('a database that accepts TCP and never answers: 503 once the connect timeout passes, never before', async (t) => {
  const { app, hole, clock } = await silentDatabaseApp(t, 4)
  for (const [label, options] of silentCases) {
    // Past the cool-down the case before left: this request's connection is a new attempt.
    clock.advance(COOL_DOWN_MS)
    const accepted = hole.accepted()
    const { all, answered } = sendAll(app, [[label, options]])
    await settle(() => answered.size > 0 || (hole.accepted() > accepted && clock.pending() > 0))
    t.equal(answered.size, 0, `${label}: no answer while PostgreSQL may still accept the connection`)
    clock.advance(CONNECT_TIMEOUT * 1000 - 1)
    await sleep(50)
    t.equal(answered.size, 0, `${label}: none a millisecond before the connect timeout`)
    clock.advance(1)
    const { observed, result } = (await all)[0]!
    t.equal(observed.status, 503, `${label}: 503 at the connect timeout`)
    t.equal(observed.code, 'unavailable', `${label}: unavailable`)
    t.ok(Number(observed.retryAfter) >= 1, `${label}: Retry-After`)
    t.notMatch(result?.raw ?? '', /CONNECT_TIMEOUT|127\.0\.0\.1|select/i, `${label}: no driver message reaches the client`)
    t.same(observed.offSpec, [], `${label}: matches openapi.yaml`)
  }
  t.ok(hole.accepted() >= silentCases.length, `the driver did open TCP connections to the silent server (${hole.accepted()})`)
})

t.test('a silent database under more concurrent requests than the pool has connections: all 503 at the connect timeout', async (t) => {
  const { app, hole, clock } = await silentDatabaseApp(t, 4)
  const { all, answered } = sendAll(app, Array.from({ length: 8 }, (_, i) => silentCases[i % 2]!))
  await settle(() => answered.size > 0 || (hole.accepted() > 0 && clock.pending() > 0))
  // The requests that are not on a connection yet queue for one meanwhile.
  await sleep(100)
  t.equal(answered.size, 0, 'no answer before the connect timeout')
  clock.advance(CONNECT_TIMEOUT * 1000)
  const parallel = await all
  t.same(parallel.map((p) => p.observed.status), Array(8).fill(503), 'eight parallel requests on a pool of four: all 503 once it passes')
  t.same(offSpec(parallel.map((p) => p.observed)), [], 'and match openapi.yaml')
})

t.test('a silent database fails fast, then serves again at the first request after the cool-down once PostgreSQL answers, without a restart', async (t) => {
  // The schema and a project, made directly: the app's own database is silent for now.
  const direct = await openDatabase({ databaseUrl: DATABASE_URL, poolSize: 1, connectTimeout: 5 })
  t.teardown(() => direct.close())
  await direct.migrate()
  const project = await proProject(direct.db, 'Silent, then back')
  const { app, hole, clock } = await silentDatabaseApp(t, 4)

  // Each /readyz sets its readiness deadline (the connect timeout's length) on the clock first.
  const first = sendAll(app, Array.from({ length: 6 }, () => ['GET /readyz', { url: '/readyz' }] as [string, CallOptions]))
  await settle(() => first.answered.size > 0 || (hole.accepted() > 0 && clock.pending() >= 6))
  clock.advance(CONNECT_TIMEOUT * 1000)
  t.same((await first.all).map((f) => f.observed.status), Array(6).fill(503), 'while silent: 503')

  // A connection the gate opened now would set its startup deadline on the clock, and the request
  // would wait for it (the host is silent and the clock stands still).
  const pendingBefore = clock.pending()
  const next = await timedCall(app, 'GET /v1/changelog', { url: '/v1/changelog', key: project.key }, NEVER_MS)
  t.equal(next.observed.status, 503, 'a request right after a failed connect: 503 unavailable')
  t.equal(next.observed.code, 'unavailable', 'with the unavailable code')
  t.equal(clock.pending(), pendingBefore, 'at once: no connection was opened for it')

  // Past any startup still waiting on the silent host, then PostgreSQL answers new connections.
  clock.advance(CONNECT_TIMEOUT * 1000)
  hole.answer()
  clock.advance(COOL_DOWN_MS)
  // The first request after the cool-down is the probe (others sent with it would be refused
  // until it is answered); it reaches PostgreSQL, and the outage is over.
  const back = [
    await timedCall(app, 'GET /readyz', { url: '/readyz' }, NEVER_MS),
    await timedCall(app, 'GET /v1/changelog', { url: '/v1/changelog', key: project.key }, NEVER_MS),
  ]
  t.same(
    back.map((b) => b.observed.status),
    [200, 200],
    `/readyz, the first request after the cool-down, and an authenticated read answer 200 (${summary(back.map((b) => b.observed))})`,
  )
  const written = await call(t, app, { method: 'POST', url: '/v1/changelog', key: project.key, body: { title: 'after the outage' } })
  t.equal(written.status, 201, 'and writes succeed again')
  t.same(offSpec(back.map((b) => b.observed)), [], 'the answers after recovery match openapi.yaml')
})

