// Network faults injected from outside the driver, through a TCP proxy between the app and
// PostgreSQL (fixtures/fault-proxy.ts): a cut, a partition (no byte moves, nothing is reset)
// and a silent host after a reset. Each time: every request answers 503 unavailable within a
// deadline however long the fault lasts, /readyz turns 503 and back, the log holds one line
// when the database becomes unreachable and one when it is back (with the number of requests
// refused), and no stack per request. And an answer lost after its commit: the retry with the
// same Idempotency-Key gets the committed record.
// The connect gate runs on a hand clock (test/helpers/clock.ts): its deadlines (a statement's,
// a new connection's, the readiness check's) and its cool-down pass only when a test advances
// it, so what is asserted is which deadline answers a request, and that none answers before it,
// never how many milliseconds a loaded machine took. A fault lasts until the test ends it.
import { Writable } from 'node:stream'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import postgres, { type Sql } from 'postgres'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { sqlState } from '../../src/db/results.js'
import { isUnavailable } from '../../src/http/errors.js'
import { byHand } from '../../src/http/key-usage.js'
import { COOL_DOWN_MS } from '../../src/db/gate.js'
import type { CallOptions } from '../helpers/app.js'
import { ManualClock, settle, underWay } from '../helpers/clock.js'
import { specProblems } from '../helpers/spec-check.js'
import { faultProxy } from './fixtures/fault-proxy.js'
import { DATABASE_URL, proProject, uniqueName } from './fixtures/pg.js'

const CONNECT_TIMEOUT_S = 2
const STATEMENT_TIMEOUT_MS = 1000
const DEADLINE_MS = 2000
const READY_DEADLINE_MS = 1000
const ADMIN_TOKEN = 'faults-admin-token-0123456789'

interface LogLine {
  level: number
  msg: string
  [field: string]: unknown
}

async function appBehindProxy(t: Test, options: { statementDeadlineMs?: number } = {}) {
  // The schema and a project, made directly: the app's own connections go through the proxy.
  const direct = await openDatabase({ databaseUrl: DATABASE_URL, poolSize: 1, connectTimeout: 5 })
  t.teardown(() => direct.close())
  await direct.migrate()
  const project = await proProject(direct.db, 'Faults')
  const proxy = await faultProxy(t, DATABASE_URL)
  const previous = process.env.PGAPPNAME
  process.env.PGAPPNAME = uniqueName('faults')
  const clock = new ManualClock()
  const handle = await openDatabase({
    databaseUrl: proxy.url,
    poolSize: 4,
    connectTimeout: CONNECT_TIMEOUT_S,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    statementDeadlineMs: options.statementDeadlineMs ?? DEADLINE_MS,
    readyDeadlineMs: READY_DEADLINE_MS,
    clock,
  })
  if (previous === undefined) delete process.env.PGAPPNAME
  else process.env.PGAPPNAME = previous
  const lines: LogLine[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as LogLine)
      done()
    },
  })
  const app = await buildApp(
    { ...defaults, logLevel: 'info', adminToken: ADMIN_TOKEN, rateLimitPerMinute: 1_000_000 },
    handle,
    // last_used_at is written by a timer; keep it out of the way of the proxy's traps.
    { logger: { stream }, keyUsage: { schedule: byHand } },
  )
  await app.ready()
  t.teardown(async () => {
    proxy.restore()
    await app.close()
    await handle.close()
  })
  return { app, proxy, project, lines, direct, handle, clock }
}

interface Answer {
  label: string
  status: number
  ms: number
  code?: string
  retryAfter?: string
  offSpec: string[]
  json?: { data?: { id: string; title: string } }
  headers: Record<string, unknown>
}

async function timed(app: FastifyInstance, label: string, options: CallOptions): Promise<Answer> {
  const method = options.method ?? 'GET'
  const headers: Record<string, string> = { ...(options.key ? { authorization: `Bearer ${options.key}` } : {}), ...options.headers }
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const started = performance.now()
  const res = await app.inject({ method, url: options.url, headers, payload: options.body === undefined ? undefined : JSON.stringify(options.body) })
  const ms = performance.now() - started
  let json: (Answer['json'] & { code?: string }) | undefined
  try {
    json = JSON.parse(res.body)
  } catch {
    json = undefined
  }
  return {
    label,
    status: res.statusCode,
    ms,
    code: json?.code,
    retryAfter: res.headers['retry-after'] as string | undefined,
    offSpec: specProblems(method, options.url, { statusCode: res.statusCode, headers: res.headers, body: res.body }),
    json,
    headers: res.headers,
  }
}

const summary = (answers: Answer[]) => answers.map((a) => `${a.label} ${a.status} ${Math.round(a.ms)} ms`).join(', ')

/** Reads and writes, as clients send them. */
function traffic(app: FastifyInstance, key: string, n: number): Promise<Answer>[] {
  return Array.from({ length: n }, (_, i) =>
    i % 3 === 2
      ? timed(app, 'POST /v1/changelog', { method: 'POST', url: '/v1/changelog', key, body: { title: `fault ${i}` } })
      : timed(app, 'GET /v1/changelog', { url: '/v1/changelog', key }),
  )
}

async function metric(app: FastifyInstance, name: string): Promise<number | undefined> {
  const res = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const line = res.body.split('\n').find((l) => l.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.split(' ')[1])
}

function checkAllRefused(t: Test, answers: Answer[]) {
  t.same(
    answers.filter((a) => !(a.status === 503 && a.code === 'unavailable' && Number(a.retryAfter) >= 1)).map((a) => `${a.label} ${a.status}`),
    [],
    'every request: 503 unavailable with Retry-After',
  )
  t.same([...new Set(answers.flatMap((a) => a.offSpec))], [], 'every answer matches openapi.yaml')
}


/** One line when the database became unreachable, one when it was back; no stack, no line per refusal. */
function checkLog(t: Test, lines: LogLine[], refusedAtLeast: number, reason: RegExp) {
  const down = lines.filter((l) => /^database unreachable since /.test(l.msg))
  const up = lines.filter((l) => /^database reachable again after /.test(l.msg))
  t.equal(down.length, 1, 'one line when the database became unreachable')
  t.equal(down[0]?.level, 50, 'at error level')
  t.match(down[0]?.reason, reason, `with the reason (${down[0]?.reason})`)
  t.equal(up.length, 1, 'one line when it was reachable again')
  t.equal(up[0]?.level, 30, 'at info level')
  t.ok(Number(up[0]?.refused) >= refusedAtLeast, `with the requests refused meanwhile (${up[0]?.refused}): ${up[0]?.msg}`)
  t.same(
    lines.filter((l) => l.level >= 40 && l !== down[0] && !/^database still unreachable /.test(l.msg)).map((l) => l.msg),
    [],
    'nothing else at warn or error level: no line per refused request (a probe failing for a new reason says it, once)',
  )
  t.same(
    lines.filter((l) => JSON.stringify(l).includes('"stack"')).map((l) => l.msg),
    [],
    'no stack in the log',
  )
}

async function warmUp(t: Test, app: FastifyInstance, key: string) {
  const warm = await Promise.all(traffic(app, key, 8))
  t.same(
    warm.map((a) => a.status),
    warm.map((a) => (a.label.startsWith('POST') ? 201 : 200)),
    'before the fault, requests succeed (the pool holds open connections)',
  )
}

/**
 * Once the fault is over: past the cool-down, the first request probes PostgreSQL and is served,
 * and so is everything after it, on the same app. A connection the fault left to close restarts
 * the cool-down when its close is handled, so the probe may come one cool-down later.
 */
async function recovers(t: Test, app: FastifyInstance, key: string, clock: ManualClock) {
  let probe: Answer | undefined
  let coolDowns = 0
  while (coolDowns < 3 && probe?.status !== 200) {
    clock.advance(COOL_DOWN_MS)
    coolDowns++
    probe = await timed(app, 'GET /readyz', { url: '/readyz' })
  }
  t.equal(probe?.status, 200, `/readyz answers 200 again, ${coolDowns} cool-down(s) after the fault's end`)
  const answers = await Promise.all(traffic(app, key, 6))
  t.same(
    answers.map((a) => a.status),
    answers.map((a) => (a.label.startsWith('POST') ? 201 : 200)),
    'and requests succeed again, on the same app',
  )
}

t.test('a partition (no byte moves, nothing is reset): /readyz 503 at its deadline, every request 503 at the statement deadline, none before', async (t) => {
  const { app, proxy, project, lines, clock } = await appBehindProxy(t)
  await warmUp(t, app, project.key)

  proxy.partition()
  const pending = clock.pending()
  const readyz = underWay([timed(app, 'GET /readyz', { url: '/readyz' })])
  // Its readiness deadline is on the clock.
  await settle(() => readyz.answered.size > 0 || clock.pending() > pending)
  const requests = underWay(traffic(app, project.key, 12))
  // /readyz asks on a connection of its own (db/client.ts): one more held connection is the
  // pool's, carrying the requests.
  await settle(() => requests.answered.size > 0 || proxy.heldConnections() > 1)
  t.equal(readyz.answered.size + requests.answered.size, 0, 'nothing answers while the deadlines have not passed')

  clock.advance(READY_DEADLINE_MS)
  const [ready] = await readyz.all
  t.equal(ready!.status, 503, '/readyz answers 503 at its deadline')
  // The rest, and any connection opened meanwhile (its connect timeout is as long), at the
  // statement deadline; a request that finds the gate cooling down is refused at once.
  clock.advance(DEADLINE_MS - READY_DEADLINE_MS)
  const answers = await requests.all
  checkAllRefused(t, [ready!, ...answers])
  t.equal(await metric(app, 'db_reachable'), 0, 'db_reachable is 0')
  t.ok((await metric(app, 'db_deadline_exceeded_total'))! >= 1, 'connections that missed the deadline were closed (db_deadline_exceeded_total)')
  t.ok((await metric(app, 'db_outage_refusals_total'))! >= answers.length, 'the refusals are counted (db_outage_refusals_total)')
  t.equal(await metric(app, 'db_outages_total'), 1, 'one outage (db_outages_total)')

  proxy.restore()
  await recovers(t, app, project.key, clock)
  t.equal(await metric(app, 'db_reachable'), 1, 'db_reachable is 1 again')
  checkLog(t, lines, answers.length, /no answer/)
})

t.test('a cut (connections reset, new ones refused): 503 at once, before any deadline; service resumes', async (t) => {
  const { app, proxy, project, lines, clock } = await appBehindProxy(t)
  await warmUp(t, app, project.key)

  proxy.cut()
  // The clock does not move: whatever answers these is the reset and the refusals, not a deadline.
  const answers = await Promise.all([...traffic(app, project.key, 12), timed(app, 'GET /readyz', { url: '/readyz' })])
  checkAllRefused(t, answers)

  proxy.restore()
  await recovers(t, app, project.key, clock)
  checkLog(t, lines, answers.length - 1, /ECONNRESET|closed/)
})

t.test('a silent host after a reset, 20 requests in flight and 20 more: 503 at once, no connection attempt while cooling down, the probe 503 at its deadline', async (t) => {
  // A statement deadline far away: what answers these requests is the reset, then the fail-fast gate.
  const { app, proxy, project, lines, clock } = await appBehindProxy(t, { statementDeadlineMs: 60_000 })
  await warmUp(t, app, project.key)

  proxy.partition()
  const inFlight = underWay(traffic(app, project.key, 20))
  // In flight: every pooled connection has sent its statements and waits for the answers.
  await settle(() => inFlight.answered.size > 0 || proxy.heldConnections() >= 4)
  t.equal(proxy.heldConnections(), 4, 'the requests are in flight on all four connections')
  proxy.silent()
  // The clock does not move: the reset answers them.
  const answers = await inFlight.all
  checkAllRefused(t, answers)

  // The reset tripped the gate: while it cools down, new requests are refused without trying
  // the silent host (each attempt would set its connect deadline on the clock, and wait for it).
  const timersBefore = clock.timersSet
  const next = await Promise.all([...traffic(app, project.key, 20), timed(app, 'GET /readyz', { url: '/readyz' })])
  checkAllRefused(t, next)
  t.equal(clock.timersSet - timersBefore, 1, 'no connection was attempted for them: the only deadline set is the readiness check\'s')

  // Once the cool-down is over, one request probes: the silent host leaves it to its deadline.
  clock.advance(COOL_DOWN_MS)
  const accepted = proxy.accepted()
  const probe = underWay([timed(app, 'GET /readyz', { url: '/readyz' })])
  await settle(() => probe.answered.size > 0 || proxy.accepted() > accepted)
  t.equal(probe.answered.size, 0, 'the probe waits while the host may still answer')
  clock.advance(READY_DEADLINE_MS)
  const [answer] = await probe.all
  t.equal(answer!.status, 503, '/readyz still answers 503 while the host is silent, at its deadline')
  t.equal(proxy.accepted(), accepted + 1, 'one connection attempt probed the host')

  // Past the probe's connect timeout, so that no connection is left waiting on the silent host.
  clock.advance(CONNECT_TIMEOUT_S * 1000)
  proxy.restore()
  await recovers(t, app, project.key, clock)
  checkLog(t, lines, answers.length + next.length, /ECONNRESET|closed/)
})

t.test('an answer lost after its commit: the retry with the same Idempotency-Key gets the committed record', async (t) => {
  const { app, proxy, project, direct, clock } = await appBehindProxy(t)
  const title = uniqueName('lost-answer')
  const request: CallOptions = { method: 'POST', url: '/v1/changelog', key: project.key, body: { title, body: 'written once' }, headers: { 'idempotency-key': title } }

  // PostgreSQL's CommandComplete for COMMIT: the transaction is durable when it is sent.
  const lost = proxy.loseAnswer(/C\x00\x00\x00\x0bCOMMIT\x00/)
  let wasLost = false
  void lost.then(() => (wasLost = true))
  const first = await timed(app, 'POST /v1/changelog', request)
  t.equal(first.status, 503, 'the answer was lost: 503 unavailable')
  t.same(first.offSpec, [], 'matching openapi.yaml')
  await Promise.resolve()
  if (!t.ok(wasLost, 'the write committed in a transaction whose COMMIT answer the proxy dropped')) return
  const [row] = (await direct.db.execute(
    sql`select id from changelog_entries where project_id = ${project.id} and title = ${title}`,
  )) as unknown as { id: string }[]
  t.ok(row, 'yet the write was committed')

  // The client retries, as the README says, until the database answers again: past the cool-down.
  clock.advance(COOL_DOWN_MS)
  const retry = await timed(app, 'POST /v1/changelog (retry)', request)
  t.equal(retry.status, 201, 'the retry answers 201')
  t.equal(retry.headers['idempotency-replayed'], 'true', 'replayed: nothing was written again')
  t.equal(retry.json?.data?.id, row?.id, 'with the committed record')
  t.equal(retry.json?.data?.title, title)
  t.same(retry.offSpec, [], 'matching openapi.yaml')
  const count = (await direct.db.execute(
    sql`select count(*)::int as n from changelog_entries where project_id = ${project.id} and title = ${title}`,
  )) as unknown as { n: number }[]
  t.equal(count[0]?.n, 1, 'one row, whatever the number of retries')
})

t.test('every way of sending a statement passes the gate: a query, .values(), .raw(), .execute(), a transaction, reserve()', async (t) => {
  const { proxy, handle, clock } = await appBehindProxy(t)
  const db = handle.db
  const client = (db as unknown as { $client: Sql }).$client
  const ways: [string, () => Promise<unknown>][] = [
    ['db.execute (Drizzle: unsafe)', () => db.execute(sql`select 1 as one`)],
    ['db.select (Drizzle: unsafe().values())', () => db.select({ one: sql<number>`1` }).from(sql`(select 1) as t`)],
    ['db.transaction (Drizzle: begin)', () => db.transaction((tx) => tx.execute(sql`select 1 as one`))],
    ['unsafe().raw()', () => client.unsafe('select 1 as one').raw()],
    ['unsafe().execute()', () => client.unsafe('select 1 as one').execute()],
    ['reserve()', async () => {
      const reserved = await client.reserve()
      try {
        return await reserved`select 1 as one`
      } finally {
        reserved.release()
      }
    }],
  ]
  for (const [label, run] of ways) t.ok(await run(), `${label} works through the gate`)

  proxy.partition()
  const settled = new Set<string>()
  const outcomes = Promise.all(
    ways.map(async ([label, run]) => {
      const outcome = await run().then(
        () => 'answered',
        (error: unknown) => `${isUnavailable(error) ? 'unavailable' : 'other error'} (${sqlState(error)})`,
      )
      settled.add(label)
      return { label, outcome }
    }),
  )
  await settle(() => settled.size > 0 || proxy.heldConnections() > 0)
  t.same([...settled], [], 'nothing is answered while the deadline has not passed')
  // The statement deadline; a connection opened meanwhile has its connect timeout, as long.
  clock.advance(DEADLINE_MS)
  const failed = await outcomes
  t.same(
    failed.filter((o) => !o.outcome.startsWith('unavailable')).map((o) => `${o.label}: ${o.outcome}`),
    [],
    `during a partition each fails as unavailable (503) at the deadline: ${failed.map((o) => `${o.label} ${o.outcome}`).join(', ')}`,
  )
})

/**
 * An app on a database of its own, for faults that ALTER DATABASE: the shared test database is
 * used by the other lanes meanwhile. `terminate()` ends the app's sessions, so that the next
 * ones meet the database's new settings.
 */
async function appOnOwnDatabase(t: Test) {
  const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  const name = `faults_${process.pid}_${Date.now().toString(36)}`
  await admin.unsafe(`create database ${name}`)
  const url = new URL(DATABASE_URL)
  url.pathname = `/${name}`
  const direct = await openDatabase({ databaseUrl: url.href, poolSize: 1, connectTimeout: 5 })
  await direct.migrate()
  const project = await proProject(direct.db, 'Faults')
  await direct.close()
  const clock = new ManualClock()
  const handle = await openDatabase({ databaseUrl: url.href, poolSize: 2, connectTimeout: CONNECT_TIMEOUT_S, statementTimeoutMs: STATEMENT_TIMEOUT_MS, statementDeadlineMs: DEADLINE_MS, readyDeadlineMs: READY_DEADLINE_MS, clock })
  const lines: LogLine[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as LogLine)
      done()
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'info', adminToken: ADMIN_TOKEN, rateLimitPerMinute: 1_000_000 }, handle, { logger: { stream }, keyUsage: { schedule: byHand } })
  await app.ready()
  t.teardown(async () => {
    await app.close()
    await handle.close()
    await admin.unsafe(`alter database ${name} allow_connections true`)
    await admin.unsafe(`drop database ${name} with (force)`)
    await admin.end({ timeout: 5 })
  })
  const terminate = () => admin.unsafe('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name])
  return { app, project, lines, clock, admin, name, terminate }
}

/**
 * Ends the app's sessions and waits out the outage their end makes (57P01), until /readyz answers
 * 200. /readyz asks on a connection of its own: the outage must have begun first, or the pool's
 * ended sessions were still to be noticed when it answered, and the requests after met them.
 */
async function newSessions(t: Test, app: FastifyInstance, clock: ManualClock, terminate: () => Promise<unknown>, lines: LogLine[]) {
  const outages = () => lines.filter((l) => /^database unreachable since /.test(l.msg)).length
  const before = outages()
  await terminate()
  await settle(() => outages() > before)
  let ready: Answer | undefined
  for (let coolDowns = 0; coolDowns < 3 && ready?.status !== 200; coolDowns++) {
    clock.advance(COOL_DOWN_MS)
    ready = await timed(app, 'GET /readyz', { url: '/readyz' })
  }
  t.equal(ready?.status, 200, 'the app has sessions again')
}

t.test('a database turned read-only (a failover onto a standby): writes 503 unavailable, reads served', async (t) => {
  const { app, project, admin, name, terminate, clock, lines } = await appOnOwnDatabase(t)
  await warmUp(t, app, project.key)
  await admin.unsafe(`alter database ${name} set default_transaction_read_only = on`)
  await newSessions(t, app, clock, terminate, lines)
  const answers = await Promise.all(traffic(app, project.key, 9))
  t.same(
    answers.filter((a) => a.label.startsWith('POST') && !(a.status === 503 && a.code === 'unavailable' && Number(a.retryAfter) >= 1)).map((a) => `${a.label} ${a.status} ${a.code}`),
    [],
    'every write: 503 unavailable with Retry-After, never a 500 (it was: "cannot execute INSERT in a read-only transaction", 25006)',
  )
  t.same(
    answers.filter((a) => a.label.startsWith('GET')).map((a) => a.status),
    [200, 200, 200, 200, 200, 200],
    'every read is served',
  )
  t.same([...new Set(answers.flatMap((a) => a.offSpec))], [], 'every answer matches openapi.yaml')
  await admin.unsafe(`alter database ${name} reset default_transaction_read_only`)
  await newSessions(t, app, clock, terminate, lines)
  const again = await Promise.all(traffic(app, project.key, 3))
  t.equal(again.filter((a) => a.label.startsWith('POST'))[0]?.status, 201, 'writes succeed once the database takes them again')
})

t.test('a database that stops accepting connections (55000): 503 at once, the outage logged once; service resumes', async (t) => {
  // Each request tried a new connection and answered 500, with a stack logged per request (found by a fault review).
  const { app, project, lines, clock, admin, name, terminate } = await appOnOwnDatabase(t)
  await warmUp(t, app, project.key)
  await admin.unsafe(`alter database ${name} allow_connections false`)
  await terminate()
  const answers = []
  // Past each cool-down a probe connects, and PostgreSQL refuses it: the outage goes on.
  for (let i = 0; i < 3; i++) {
    answers.push(...(await Promise.all([...traffic(app, project.key, 4), timed(app, 'GET /readyz', { url: '/readyz' })])))
    clock.advance(COOL_DOWN_MS)
  }
  checkAllRefused(t, answers)
  await admin.unsafe(`alter database ${name} allow_connections true`)
  await recovers(t, app, project.key, clock)
  checkLog(t, lines, 1, /55000|57P01/)
  // Begun by the sessions' end (57P01), it went on because the database refused connections: the
  // log says so once, at warn (found by a fault review: only the first reason was ever said).
  const still = lines.filter((l) => /^database still unreachable /.test(l.msg))
  const reasons = [...lines.filter((l) => /^database unreachable since /.test(l.msg)), ...still].map((l) => String(l.reason))
  t.ok(reasons.includes('PostgreSQL refused the connection (55000)'), `the log names what kept it down: ${reasons.join('; ')}`)
  t.equal(new Set(reasons).size, reasons.length, 'each reason once')
  t.same(new Set(still.map((l) => l.level)), new Set(still.length ? [40] : []), 'at warn level')
})
