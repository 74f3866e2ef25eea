// Two server processes (the real entry point) on one PostgreSQL database, each running its
// dispatcher: every delivery is made exactly once, never by both at once, and SIGTERM lets the
// attempts in flight finish. PostgreSQL only (see fixtures/pg.ts), in a database of the file's
// own so that no other file's deliveries or dispatchers meet these.
//
// Nothing is timed: the receivers hold every request until both instances are attempting at
// the same moment, which the count of held requests proves (one instance holds at most its
// concurrency), then answer; SIGTERM comes once an attempt is known to be in flight, and the
// receiver answers once the servers have logged that they are shutting down.
import t from 'tap'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { rowsOf } from '../../src/db/results.js'
import { DISPATCH_DEFAULTS } from '../../src/jobs/webhook-dispatcher.js'
import { freshPostgresDatabase } from '../helpers/db.js'
import { startReceiver, type Receiver } from '../helpers/receiver.js'
import { createEndpoint, endpointRecord, waitUntil, type EndpointRow } from '../helpers/webhooks.js'
import { httpRequest, startServer, uniqueName, type Server } from './fixtures/pg.js'

const ENDPOINTS = 12
const EVENTS_PER_ENDPOINT = 25
const ADMIN_TOKEN = 'webhook-dispatch-admin-token'

const url = await freshPostgresDatabase(t)
const database = await openDatabase({ databaseUrl: url, poolSize: 4 })
t.teardown(() => database.close())
await database.migrate()
const { db } = database

async function statuses(): Promise<Record<string, number>> {
  const rows = rowsOf<{ status: string; n: number }>(await db.execute(sql`select status, count(*)::int as n from webhook_deliveries group by status`))
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]))
}

async function server(label: string): Promise<Server> {
  const started = await startServer({
    DATABASE_URL: url,
    PGAPPNAME: uniqueName(label),
    ADMIN_TOKEN,
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_DISPATCH: 'true',
  })
  t.teardown(() => {
    if (started.running()) started.child.kill('SIGKILL')
  })
  return started
}

async function succeededAttempts(s: Server): Promise<number> {
  const metrics = await httpRequest(`${s.base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const line = /^webhook_attempts_total\{outcome="succeeded"\} (\d+)$/m.exec(metrics.body ?? '')
  return Number(line?.[1] ?? NaN)
}

t.test('two instances, one database: every delivery exactly once, never two attempts at one delivery', async (t) => {
  const receivers: Receiver[] = []
  const endpoints: EndpointRow[] = []
  for (let i = 0; i < ENDPOINTS; i++) {
    const receiver = await startReceiver('hold')
    receivers.push(receiver)
    endpoints.push(await createEndpoint(receiver.url, { db }))
  }
  // Written before the instances start: a backlog both claim from at once.
  const repos = makeRepos(db)
  for (const endpoint of endpoints) {
    await repos.transaction(async (tx) => {
      for (let i = 0; i < EVENTS_PER_ENDPOINT; i++) await tx.outbox.record(endpoint.project_id, 'webhook.test', endpointRecord(endpoint))
    })
  }
  const total = ENDPOINTS * EVENTS_PER_ENDPOINT
  t.same(await statuses(), { pending: total })

  const a = await server('dispatch-a')
  const b = await server('dispatch-b')
  const held = () => receivers.reduce((sum, r) => sum + r.open(), 0)
  const both = DISPATCH_DEFAULTS.concurrency + 1
  await waitUntil(async () => held(), (n) => n >= both)
  t.ok(held() > DISPATCH_DEFAULTS.concurrency, `${held()} attempts in flight at once: more than one instance's ${DISPATCH_DEFAULTS.concurrency}, so both were attempting`)

  for (const receiver of receivers) {
    receiver.answer({ status: 200, delayMs: 5 })
    receiver.release()
  }
  await waitUntil(statuses, (s) => s.succeeded === total)

  const duplicates: string[] = []
  for (const [i, receiver] of receivers.entries()) {
    const ids = receiver.requests.map((r) => String(r.headers['webhook-id']))
    t.equal(new Set(ids).size, EVENTS_PER_ENDPOINT, `endpoint ${i}: every event`)
    if (ids.length !== EVENTS_PER_ENDPOINT) duplicates.push(`endpoint ${i}: ${ids.length} requests for ${new Set(ids).size} events`)
  }
  t.same(duplicates, [], 'and each exactly once')
  const attempts = rowsOf<{ attempts: number; n: number }>(await db.execute(sql`select attempts, count(*)::int as n from webhook_deliveries group by attempts`))
  t.same(
    attempts.map((r) => [Number(r.attempts), Number(r.n)]),
    [[1, total]],
    'one attempt recorded per delivery',
  )
  const [byA, byB] = [await succeededAttempts(a), await succeededAttempts(b)]
  t.equal(byA + byB, total, `the instances' metrics count them once: ${byA} by one, ${byB} by the other`)

  await t.test('SIGTERM: the attempts in flight finish, and both exit 0', async (t) => {
    const receiver = receivers[0]!
    receiver.answer('hold')
    const before = receiver.requests.length
    await repos.transaction((tx) => tx.outbox.record(endpoints[0]!.project_id, 'webhook.test', endpointRecord(endpoints[0]!)))
    // Picked up by one instance's poll, within a second or so.
    await receiver.received(before + 1)
    a.child.kill('SIGTERM')
    b.child.kill('SIGTERM')
    await waitUntil(async () => a.output() + b.output(), (out) => (out.match(/"signal":"SIGTERM"/g) ?? []).length === 2)
    t.equal(receiver.open(), 1, 'the attempt is still in flight while they drain')
    receiver.release()
    t.same(await Promise.all([a.exited, b.exited]), [0, 0], 'both exit 0, within their grace')
    t.same(await statuses(), { succeeded: total + 1 }, 'the attempt that was in flight was recorded')
  })
})
