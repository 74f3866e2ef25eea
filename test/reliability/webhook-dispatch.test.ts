// Two server processes (the real entry point) on one PostgreSQL database, each running its
// dispatcher: every delivery succeeds once, no delivery is ever attempted by both at the same
// time, every attempt made is recorded once, and SIGTERM lets the attempts in flight finish.
// PostgreSQL only (see fixtures/pg.ts), in a database of the file's own so that no other file's
// deliveries or dispatchers meet these.
//
// Nothing is timed: the receivers hold every request until both instances are attempting at
// the same moment, which the count of held requests proves (one instance holds at most its
// concurrency), then answer; SIGTERM comes once an attempt is known to be in flight, and the
// receiver answers once the servers have logged that they are shutting down. Should a machine
// be so slow that a held attempt reaches its 10 s deadline, that attempt is a recorded failure
// and is made again later: what is checked holds either way (at least once, never two at once).
import t from 'tap'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { rowsOf } from '../../src/db/results.js'
import { DISPATCH_DEFAULTS } from '../../src/jobs/webhook-dispatcher.js'
import { freshPostgresDatabase } from '../helpers/db.js'
import { fileTeardown, thisFile } from '../helpers/folder-suite.js'
import { startReceiver, type Receiver, type Received } from '../helpers/receiver.js'
import { createEndpoint, endpointRecord, waitUntil, type EndpointRow } from '../helpers/webhooks.js'
import { httpRequest, startServer, uniqueName, type Server } from './fixtures/pg.js'

const ENDPOINTS = 12
const EVENTS_PER_ENDPOINT = 25
const ADMIN_TOKEN = 'webhook-dispatch-admin-token'

const url = await freshPostgresDatabase(thisFile)
const database = await openDatabase({ databaseUrl: url, poolSize: 4 })
fileTeardown(() => database.close())
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
  fileTeardown(() => {
    if (started.running()) started.child.kill('SIGKILL')
  })
  return started
}

async function succeededAttempts(s: Server): Promise<number> {
  const metrics = await httpRequest(`${s.base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const line = /^webhook_attempts_total\{outcome="succeeded"\} (\d+)$/m.exec(metrics.body ?? '')
  return Number(line?.[1] ?? NaN)
}

t.test('two instances, one database: every delivery succeeds once, never two attempts at one delivery at the same time', async (t) => {
  const a = await server('dispatch-a')
  const b = await server('dispatch-b')
  const receivers: Receiver[] = []
  const endpoints: EndpointRow[] = []
  for (let i = 0; i < ENDPOINTS; i++) {
    const receiver = await startReceiver('hold')
    receivers.push(receiver)
    endpoints.push(await createEndpoint(receiver.url, { db }))
  }
  // One commit: a backlog both instances find at their next look.
  const repos = makeRepos(db)
  await repos.transaction(async (tx) => {
    for (const endpoint of endpoints) {
      for (let i = 0; i < EVENTS_PER_ENDPOINT; i++) await tx.outbox.record(endpoint.project_id, 'webhook.test', endpointRecord(endpoint))
    }
  })
  const total = ENDPOINTS * EVENTS_PER_ENDPOINT

  const held = () => receivers.reduce((sum, r) => sum + r.open(), 0)
  await waitUntil(async () => held(), (n) => n > DISPATCH_DEFAULTS.concurrency)
  t.pass(`${held()} attempts in flight at once: more than one instance's ${DISPATCH_DEFAULTS.concurrency}, so both were attempting`)

  for (const receiver of receivers) {
    receiver.answer({ status: 200, delayMs: 5 })
    receiver.release()
  }
  await waitUntil(statuses, (s) => s.succeeded === total)

  const requests = new Map<string, Received[]>()
  for (const receiver of receivers) for (const r of receiver.requests) requests.set(String(r.headers['webhook-id']), [...(requests.get(String(r.headers['webhook-id'])) ?? []), r])
  t.equal(requests.size, total, 'every event reached its endpoint')
  const overlapping = [...requests].filter(([, made]) => made.some((r, i) => i > 0 && r.at < (made[i - 1]!.closed ?? Infinity)))
  t.same(overlapping.map(([id]) => id), [], 'no delivery was attempted twice at the same time')
  const rows = rowsOf<{ event_id: string; attempts: number; status: string }>(await db.execute(sql`select event_id, attempts, status from webhook_deliveries`))
  const miscounted = rows.filter((row) => row.status !== 'succeeded' || Number(row.attempts) !== requests.get(row.event_id)?.length)
  t.same(miscounted, [], 'each succeeded, with one attempt recorded per request its endpoint received')
  const repeated = rows.filter((row) => Number(row.attempts) > 1).length
  t.comment(repeated === 0 ? 'every delivery in one attempt' : `${repeated} deliveries needed a second attempt (a held attempt reached its deadline on a slow machine)`)
  const [byA, byB] = [await succeededAttempts(a), await succeededAttempts(b)]
  t.equal(byA + byB, total, `the instances' metrics count one success per delivery: ${byA} by one, ${byB} by the other`)

  await t.test('SIGTERM: the attempt in flight finishes and is recorded, and both exit 0', async (t) => {
    const receiver = receivers[0]!
    receiver.answer('hold')
    const before = receiver.requests.length
    const event = await repos.transaction((tx) => tx.outbox.record(endpoints[0]!.project_id, 'webhook.test', endpointRecord(endpoints[0]!)))
    // Picked up by one instance's poll, within a second or so.
    const [held] = (await receiver.received(before + 1)).slice(before)
    a.child.kill('SIGTERM')
    b.child.kill('SIGTERM')
    await waitUntil(async () => a.output() + b.output(), (out) => (out.match(/"signal":"SIGTERM"/g) ?? []).length === 2)
    const inFlight = held!.closed === undefined
    t.comment(inFlight ? 'the attempt was still in flight once both were draining' : 'the attempt had reached its deadline before the drain (a slow machine)')
    receiver.release()
    t.same(await Promise.all([a.exited, b.exited]), [0, 0], 'both exit 0, within their grace')
    const [row] = rowsOf<{ status: string; attempts: number; claimed: boolean }>(
      await db.execute(sql`select status, attempts, claimed_until is not null as claimed from webhook_deliveries where event_id = ${event.id}`),
    )
    t.match(row, { attempts: 1, claimed: false }, 'its attempt was recorded before the exit, and its claim let go')
    t.equal(row!.status, inFlight ? 'succeeded' : 'pending', inFlight ? 'answered during the drain: succeeded' : 'timed out: pending, for a retry')
  })
})
