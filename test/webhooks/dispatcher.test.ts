// The dispatcher end to end, on PGlite and on PostgreSQL (DATABASE_URL): events written through
// the outbox, delivered to local receivers, and what each delivery and endpoint row says
// afterwards. Deadlines are fired by the test (manual timers) and retry waits are held only to
// lower bounds, so that nothing here depends on how fast the machine is; every wait is for a
// state, bounded by tap's timeout.
import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { Webhook } from 'standardwebhooks'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import type { Database } from '../../src/db/client.js'
import { dispatchRepo } from '../../src/db/repos/dispatch.js'
import { rowsOf } from '../../src/db/results.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { webhook_deliveries, webhook_endpoints } from '../../src/db/schema.js'
import { newWebhookSecret } from '../../src/domain/secrets.js'
import { autovacuumRuns, startWebhookDispatcher } from '../../src/jobs/webhook-dispatcher.js'
import { systemResolver, type Resolver } from '../../src/webhooks/send.js'
import { call } from '../helpers/app.js'
import { startReceiver } from '../helpers/receiver.js'
import { webhookProblems } from '../helpers/spec-check.js'
import {
  createEndpoint,
  deliveryReaches,
  deliveryRow,
  endpointRow,
  headArrived,
  manualTimers,
  recordEvent,
  recordingLog,
  startDispatcher,
  waitUntil,
  webhookDatabase,
} from '../helpers/webhooks.js'

const handle = await webhookDatabase()
const { db } = handle
const HOUR = 3_600_000

t.test('woken by the write’s hook: delivered with the Standard Webhooks headers and the event as the body', async (t) => {
  const receiver = await startReceiver()
  const endpoint = await createEndpoint(receiver.url)
  const at = new Date()
  // No polling within the test: only the hook can wake it.
  const dispatcher = await startDispatcher(t, { pollMs: HOUR, now: () => at })
  const { eventId, deliveryId } = await recordEvent(endpoint, { deliveriesDue: () => dispatcher.wake() })
  const [request] = await receiver.received(1)
  const row = await deliveryReaches(deliveryId, 'succeeded')

  t.equal(request!.method, 'POST')
  t.equal(request!.headers['content-type'], 'application/json')
  t.equal(request!.headers['webhook-id'], eventId)
  t.equal(request!.headers['webhook-timestamp'], String(Math.floor(at.getTime() / 1000)), 'the Unix seconds of the attempt')
  t.same(new Webhook(endpoint.secret).verify(request!.body, request!.headers as Record<string, string>), JSON.parse(request!.body), 'the signature verifies with the endpoint’s secret')
  t.same(webhookProblems('webhook.test', request!), [], 'the delivery matches openapi.yaml’s webhook.test')
  const event = JSON.parse(request!.body)
  t.match(event, { id: eventId, type: 'webhook.test', data: { id: endpoint.id, url: receiver.url } })
  t.match(row, { status: 'succeeded', attempts: 1, last_response_status: 200, last_error: null, next_attempt_at: null, claimed_until: null, claim_token: null })
  t.ok(row.last_attempt_at, 'last_attempt_at set')
  t.equal((await endpointRow(endpoint.id)).failing_since, null)
})

t.test('after a rotation: two signatures, each secret verifies', async (t) => {
  const receiver = await startReceiver()
  const endpoint = await createEndpoint(receiver.url)
  const previous = newWebhookSecret()
  await db
    .update(webhook_endpoints)
    .set({ previous_secret: previous, previous_secret_expires_at: sql`now() + interval '24 hours'` })
    .where(eq(webhook_endpoints.id, endpoint.id))
  const dispatcher = await startDispatcher(t)
  await recordEvent(endpoint, { deliveriesDue: () => dispatcher.wake() })
  const [request] = await receiver.received(1)
  t.equal(String(request!.headers['webhook-signature']).split(' ').length, 2)
  for (const secret of [endpoint.secret, previous]) t.ok(new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>))
  t.same(webhookProblems('webhook.test', request!), [])
})

t.test('failures are retried on WEBHOOK_RETRY_SCHEDULE, with the same webhook-id, then the delivery is failed', async (t) => {
  const receiver = await startReceiver({ status: 500 })
  const endpoint = await createEndpoint(receiver.url)
  const schedule = [60, 120]
  await startDispatcher(t, { schedule, pollMs: 10, random: () => 0 })
  const { eventId, deliveryId } = await recordEvent(endpoint)
  const row = await deliveryReaches(deliveryId, 'failed', 3)
  t.match(row, { status: 'failed', attempts: 3, last_response_status: 500, last_error: 'answered 500', next_attempt_at: null })
  const requests = await receiver.received(3)
  t.equal(requests.length, 3, 'the first attempt and one per entry of the schedule, no more')
  t.same(
    requests.map((r) => r.headers['webhook-id']),
    [eventId, eventId, eventId],
  )
  // The wait runs from when the failure was recorded, after the request arrived: a lower bound (ms precision).
  t.ok(requests[1]!.at - requests[0]!.at >= schedule[0]! - 1, `the first retry came after ${schedule[0]} ms (${Math.round(requests[1]!.at - requests[0]!.at)})`)
  t.ok(requests[2]!.at - requests[1]!.at >= schedule[1]! - 1, `the second after ${schedule[1]} ms (${Math.round(requests[2]!.at - requests[1]!.at)})`)
  t.not(requests[0]!.headers['webhook-timestamp'], undefined)
})

t.test('410 Gone disables the endpoint at once; the delivery is failed', async (t) => {
  const receiver = await startReceiver({ status: 410 })
  const endpoint = await createEndpoint(receiver.url)
  const log = recordingLog()
  await startDispatcher(t, { schedule: [10, 10, 10], log })
  const { deliveryId } = await recordEvent(endpoint)
  t.match(await deliveryReaches(deliveryId, 'failed'), { attempts: 1, last_response_status: 410, last_error: 'answered 410 Gone: the endpoint is disabled' })
  t.match(await endpointRow(endpoint.id), { enabled: false, disabled_reason: 'gone' })
  t.match(log.lines, [{ level: 'warn', fields: { endpoint_id: endpoint.id, reason: 'gone' } }], 'logged for the operator')
})

t.test('410 Gone: the endpoint’s other pending deliveries are parked (pending, next_attempt_at null), out of every claim’s way', async (t) => {
  const receiver = await startReceiver({ status: 410 })
  const endpoint = await createEndpoint(receiver.url)
  const first = await recordEvent(endpoint)
  const rest = [await recordEvent(endpoint), await recordEvent(endpoint)]
  await startDispatcher(t, { perEndpoint: 1, pollMs: 10 })
  await deliveryReaches(first.deliveryId, 'failed')
  for (const { deliveryId } of rest) {
    const row = await waitUntil(
      () => deliveryRow(deliveryId),
      (row) => row.next_attempt_at === null,
    )
    t.match(row, { status: 'pending', attempts: 0, claimed_until: null }, 'waiting for the endpoint to be enabled')
  }
  t.equal(receiver.requests.length, 1, 'nothing more was sent')
})

t.test('a disabled endpoint is sent nothing; its pending deliveries go once it is enabled again', async (t) => {
  const paused = await startReceiver()
  const endpoint = await createEndpoint(paused.url)
  const { deliveryId } = await recordEvent(endpoint)
  await db.update(webhook_endpoints).set({ enabled: false }).where(eq(webhook_endpoints.id, endpoint.id))

  const dispatcher = await startDispatcher(t)
  // A later delivery to another endpoint is made: the dispatcher has looked past the disabled one's.
  const other = await startReceiver()
  const { deliveryId: later } = await recordEvent(await createEndpoint(other.url), { deliveriesDue: () => dispatcher.wake() })
  await deliveryReaches(later, 'succeeded')
  t.equal(paused.requests.length, 0, 'nothing was sent to the disabled endpoint')
  t.match(await deliveryRow(deliveryId), { status: 'pending', attempts: 0, claimed_until: null })

  await db.update(webhook_endpoints).set({ enabled: true, disabled_reason: null }).where(eq(webhook_endpoints.id, endpoint.id))
  dispatcher.wake()
  await deliveryReaches(deliveryId, 'succeeded')
  t.equal(paused.requests.length, 1, 'sent once enabled')
})

t.test('an endpoint whose attempts have all failed for 5 days is disabled (failing); its delivery waits, pending', async (t) => {
  const receiver = await startReceiver({ status: 503 })
  const endpoint = await createEndpoint(receiver.url)
  await db.update(webhook_endpoints).set({ failing_since: sql`now() - interval '5 days 1 minute'` }).where(eq(webhook_endpoints.id, endpoint.id))
  const log = recordingLog()
  await startDispatcher(t, { schedule: [10, 10, 10], pollMs: 10, log })
  const { deliveryId } = await recordEvent(endpoint)
  await waitUntil(
    () => endpointRow(endpoint.id),
    (row) => !row.enabled,
  )
  t.match(await endpointRow(endpoint.id), { enabled: false, disabled_reason: 'failing' })
  t.match(await deliveryRow(deliveryId), { status: 'pending', attempts: 1, last_error: 'answered 503' })
  t.match(log.lines, [{ level: 'warn', fields: { endpoint_id: endpoint.id, reason: 'failing' } }])
  t.equal(receiver.requests.length, 1, 'and nothing more is sent to it')
})

t.test('failing_since: set by the first failure, cleared by the next success', async (t) => {
  const receiver = await startReceiver({ status: 500 })
  const endpoint = await createEndpoint(receiver.url)
  await startDispatcher(t, { schedule: [HOUR] })
  const { deliveryId } = await recordEvent(endpoint)
  const failed = await deliveryReaches(deliveryId, 'pending', 1)
  t.equal((await endpointRow(endpoint.id)).failing_since?.getTime(), failed.last_attempt_at!.getTime())
  receiver.answer({ status: 200 })
  await db.update(webhook_deliveries).set({ next_attempt_at: sql`now()` }).where(eq(webhook_deliveries.id, deliveryId))
  await deliveryReaches(deliveryId, 'succeeded', 2)
  t.equal((await endpointRow(endpoint.id)).failing_since, null)
})

t.test('a retry asked for during an attempt that then succeeds: attempted again once that attempt is recorded, not dropped', async (t) => {
  const receiver = await startReceiver('hold')
  const endpoint = await createEndpoint(receiver.url)
  // No polling within the test: only the write's hook and the dispatcher's own looks.
  const dispatcher = await startDispatcher(t, { pollMs: HOUR })
  const repos = makeRepos(db, undefined, { deliveriesDue: () => dispatcher.wake() })
  const { deliveryId } = await recordEvent(endpoint, { deliveriesDue: () => dispatcher.wake() })
  await receiver.received(1)
  const retried = await repos.transaction((tx) => tx.webhooks.retry(endpoint.project_id, endpoint.id, deliveryId))
  t.equal(retried.outcome, 'retried')
  receiver.answer({ status: 200 })
  receiver.release()
  await receiver.received(2)
  t.match(await deliveryReaches(deliveryId, 'succeeded', 2), { attempts: 2 }, 'both attempts counted')
  t.equal(receiver.requests.length, 2)
})

t.test('the SSRF guard on: loopback is never reached, by a literal address, a name, or a resolver’s answer', async (t) => {
  const receiver = await startReceiver()
  const resolve: Resolver = async (name, signal) => {
    if (name === 'hooks.example.com') return [{ address: '127.0.0.1', family: 4 }]
    if (name === 'mixed.example.com')
      return [
        { address: '8.8.8.8', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ]
    return systemResolver(name, signal)
  }
  await startDispatcher(t, { allowPrivateNetworks: false, resolve })
  const cases = [
    { url: `http://127.0.0.1:${receiver.port}/hook`, error: /^the address 127\.0\.0\.1 is not on the public internet$/, what: 'a literal 127.0.0.1' },
    { url: `http://localhost:${receiver.port}/hook`, error: /^the host name localhost does not resolve to a public internet address$/, what: 'the name localhost' },
    { url: `http://hooks.example.com:${receiver.port}/hook`, error: /^the host name hooks\.example\.com does not resolve to a public internet address$/, what: 'a public-looking name resolved to 127.0.0.1' },
    { url: `http://mixed.example.com:${receiver.port}/hook`, error: /^the host name mixed\.example\.com does not resolve to a public internet address$/, what: 'a name with a public and a loopback address' },
  ]
  const deliveries = []
  // Written directly, as the API's check at creation would refuse the literal one.
  for (const c of cases) deliveries.push((await recordEvent(await createEndpoint(c.url))).deliveryId)
  for (const [i, c] of cases.entries()) {
    const row = await deliveryReaches(deliveries[i]!, 'pending', 1)
    t.match(row, { attempts: 1, last_response_status: null, last_error: c.error }, c.what)
  }
  t.equal(receiver.requests.length, 0, 'the receiver on 127.0.0.1 saw none of them')
})

t.test('a DNS lookup that never answers holds its slot no longer than the deadline; last_error names the host', async (t) => {
  let stopped = 0
  const never: Resolver = (_name, signal) => {
    signal.addEventListener('abort', () => stopped++, { once: true })
    return new Promise(() => {})
  }
  const dispatcher = await startDispatcher(t, { resolve: never, timeoutMs: 200, concurrency: 1 })
  const { deliveryId } = await recordEvent(await createEndpoint('https://hangs.example.com/hook'), { deliveriesDue: () => dispatcher.wake() })
  t.match(await deliveryReaches(deliveryId, 'pending', 1), { attempts: 1, last_response_status: null, last_error: 'the host name hangs.example.com did not resolve within 0.2 s' })
  t.equal(stopped, 1, 'the lookup was told to stop')
  const healthy = await startReceiver()
  const next = await recordEvent(await createEndpoint(healthy.url), { deliveriesDue: () => dispatcher.wake() })
  await deliveryReaches(next.deliveryId, 'succeeded')
  t.pass('the one slot was free again for the next delivery')
})

t.test('a redirect is not followed: one failed attempt, and its target sees nothing', async (t) => {
  const target = await startReceiver()
  const receiver = await startReceiver({ status: 302, location: target.url })
  const endpoint = await createEndpoint(receiver.url)
  await startDispatcher(t)
  const { deliveryId } = await recordEvent(endpoint)
  t.match(await deliveryReaches(deliveryId, 'pending', 1), { attempts: 1, last_response_status: 302, last_error: 'answered 302: redirects are not followed' })
  t.equal(target.requests.length, 0)
})

t.test('each misbehaving receiver costs one attempt, and a healthy endpoint is delivered to meanwhile', async (t) => {
  const timers = manualTimers()
  const dispatcher = await startDispatcher(t, { timers, timeoutMs: 10_000 })
  const wake = () => dispatcher.wake()
  const receivers = {
    hang: await startReceiver('hang'),
    slow: await startReceiver('slow'),
    huge: await startReceiver('huge'),
    reset: await startReceiver('reset'),
  }
  const deliveries: Record<string, string> = {}
  const slowHead = headArrived(t, receivers.slow.port)
  for (const [name, receiver] of Object.entries(receivers)) {
    deliveries[name] = (await recordEvent(await createEndpoint(receiver.url), { deliveriesDue: wake })).deliveryId
  }
  await Promise.all([receivers.hang.received(1), slowHead])
  t.match(await deliveryReaches(deliveries.huge!, 'succeeded'), { attempts: 1, last_response_status: 200 }, 'an endless body: success once its head is read, the rest never')
  t.match(await deliveryReaches(deliveries.reset!, 'pending', 1), { attempts: 1, last_response_status: null, last_error: 'connection reset' })

  const healthy = await startReceiver()
  const { deliveryId } = await recordEvent(await createEndpoint(healthy.url), { deliveriesDue: wake })
  await deliveryReaches(deliveryId, 'succeeded')
  t.equal(receivers.hang.open() + receivers.slow.open(), 2, 'delivered to the healthy endpoint while the hanging and the slow one held their attempts')

  t.equal(timers.fire(), 2, 'the two attempts still running reach their deadline')
  t.match(await deliveryReaches(deliveries.hang!, 'pending', 1), { attempts: 1, last_response_status: null, last_error: 'timed out after 10 s' }, 'hang: no answer')
  t.match(
    await deliveryReaches(deliveries.slow!, 'succeeded', 1),
    { attempts: 1, last_response_status: 200, last_error: null },
    'slow: its 200 had arrived; the body cut off by the deadline changes nothing',
  )
  for (const [name, receiver] of Object.entries(receivers)) t.equal(receiver.requests.length, 1, `${name}: one request`)
})

t.test('stop(): attempts in flight finish and are recorded; nothing more is claimed', async (t) => {
  const held = await startReceiver('hold')
  const endpoint = await createEndpoint(held.url)
  const dispatcher = await startDispatcher(t, { drainMs: HOUR })
  const { deliveryId } = await recordEvent(endpoint, { deliveriesDue: () => dispatcher.wake() })
  await held.received(1)

  let stopped = false
  const stopping = dispatcher.stop().then(() => (stopped = true))
  const other = await startReceiver()
  const { deliveryId: after } = await recordEvent(await createEndpoint(other.url), { deliveriesDue: () => dispatcher.wake() })
  t.equal(stopped, false, 'stop() waits for the attempt in flight')
  held.release()
  await stopping
  t.match(await deliveryRow(deliveryId), { status: 'succeeded', attempts: 1, claimed_until: null }, 'the attempt in flight was recorded')
  t.match(await deliveryRow(after), { status: 'pending', attempts: 0, claimed_until: null, claim_token: null }, 'the later delivery was not claimed')
  t.equal(other.requests.length, 0)
})

t.test('stop(): an attempt still running when the drain ends is cut off and its delivery given back', async (t) => {
  const receiver = await startReceiver('hang')
  const endpoint = await createEndpoint(receiver.url)
  const dispatcher = await startDispatcher(t, { drainMs: 20 })
  const { deliveryId } = await recordEvent(endpoint, { deliveriesDue: () => dispatcher.wake() })
  await receiver.received(1)
  await dispatcher.stop()
  t.match(await deliveryRow(deliveryId), { status: 'pending', attempts: 0, claimed_until: null, claim_token: null }, 'due again, for any instance')
  await waitUntil(async () => receiver.open(), (open) => open === 0)
  t.pass('its connection was closed')
})

t.test('a claim left by an instance that died is taken over once its lease runs out', async (t) => {
  const receiver = await startReceiver()
  const endpoint = await createEndpoint(receiver.url)
  const { deliveryId } = await recordEvent(endpoint)
  const { deliveries: claims } = await dispatchRepo(db).claim({ limit: 100, perEndpoint: 100, perFailingEndpoint: 100, perProject: 100, leaseMs: HOUR, attemptMs: HOUR })
  t.ok(claims.some((c) => c.id === deliveryId), 'claimed by an instance that then died')
  const dispatcher = await startDispatcher(t)
  dispatcher.wake()
  await db.update(webhook_deliveries).set({ claimed_until: sql`now() - interval '1 millisecond'` }).where(eq(webhook_deliveries.id, deliveryId))
  await deliveryReaches(deliveryId, 'succeeded')
  t.equal(receiver.requests.length, 1)
})

t.test('the database down: logged once, never thrown; logged again when it answers', async (t) => {
  let down = true
  let calls = 0
  const failing = {
    async execute() {
      calls++
      if (down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
      return []
    },
  } as unknown as Database
  const log = recordingLog()
  const dispatcher = startWebhookDispatcher({
    db: failing,
    log,
    config: { webhookRetryScheduleMs: [1000], webhookAllowPrivateNetworks: true },
    pollMs: 5,
  })
  t.teardown(() => dispatcher.stop())
  await waitUntil(async () => calls, (n) => n >= 5)
  t.same(
    log.lines.map((l) => [l.level, l.fields]),
    [['warn', { err: { code: 'ECONNREFUSED' } }]],
    'one line for the outage, with its code and no query',
  )
  down = false
  await waitUntil(async () => log.lines.length, (n) => n >= 2)
  t.match(log.lines[1], { level: 'info', message: /answers again/ })
})

t.test('beside an app: its test operation wakes the dispatcher through buildApp’s hook, and GET /metrics counts the attempts and the delivery latency', async (t) => {
  let dispatcher: { wake(): void } | undefined
  const adminToken = 'webhook-metrics-admin-token'
  const config = { ...defaults, logLevel: 'silent' as const, adminToken, webhookAllowPrivateNetworks: true }
  const app = await buildApp(config, handle, { deliveriesDue: () => dispatcher?.wake() })
  t.teardown(() => app.close())
  // No polling within the test: only the hook can wake it.
  dispatcher = await startDispatcher(t, { metrics: app.metrics, pollMs: HOUR })
  const { apiKey: key } = await makeRepos(db).projects.create({ name: 'Beside an app', plan: 'pro', beta_enabled: true })
  const ok = await startReceiver()
  const failing = await startReceiver({ status: 500 })
  const deliveries: string[] = []
  for (const receiver of [ok, failing]) {
    const created = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: receiver.url } })
    t.equal(created.status, 201)
    const sent = await call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${created.json.data.id}/test`, key })
    t.equal(sent.status, 202)
    deliveries.push(sent.json.data.id)
    const [request] = await receiver.received(1)
    t.ok(new Webhook(created.json.secret).verify(request!.body, request!.headers as Record<string, string>), 'signed with the secret the API answered')
  }
  await deliveryReaches(deliveries[0]!, 'succeeded')
  await deliveryReaches(deliveries[1]!, 'pending', 1)
  const res = await call(t, app, { url: '/metrics', headers: { authorization: `Bearer ${adminToken}` } })
  t.equal(res.status, 200)
  t.match(res.raw, /^webhook_attempts_total\{outcome="succeeded"\} 1$/m)
  t.match(res.raw, /^webhook_attempts_total\{outcome="http_error"\} 1$/m)
  t.match(res.raw, /^webhook_attempts_total\{outcome="timeout"\} 0$/m, 'every outcome from the start')
  t.match(res.raw, /^webhook_delivery_latency_seconds_count 1$/m)
  t.match(res.raw, /^# HELP webhook_attempts_total \S/m)
})

t.test('analyzeEveryMs (PGlite): the deliveries’ statistics are refreshed at start, and again once deliveries have changed', async (t) => {
  let analyzed = 0
  const counting = new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver)
      return (query: { queryChunks?: unknown[] }) => {
        if (JSON.stringify(query.queryChunks ?? '').includes('analyze webhook_deliveries')) analyzed++
        return target.execute(query as never)
      }
    },
  })
  const receiver = await startReceiver()
  const dispatcher = await startDispatcher(t, { db: counting, analyzeEveryMs: 1, pollMs: 10 })
  await waitUntil(async () => analyzed, (n) => n >= 1)
  const { deliveryId } = await recordEvent(await createEndpoint(receiver.url), { deliveriesDue: () => dispatcher.wake() })
  await deliveryReaches(deliveryId, 'succeeded')
  await waitUntil(async () => analyzed, (n) => n >= 2)
  t.pass(`analyzed ${analyzed} times`)
})

t.test('autovacuumRuns: the dispatcher keeps the statistics itself on PGlite, and on a PostgreSQL whose autovacuum is off', async (t) => {
  const database = handle
  if (database.kind === 'pglite') {
    t.equal(await autovacuumRuns(database), false, 'PGlite runs no autovacuum')
  } else {
    // Read independently of the function: this machine's PostgreSQL may run with autovacuum off.
    const [setting] = rowsOf<{ autovacuum: string }>(await database.db.execute(sql`show autovacuum`))
    t.equal(await autovacuumRuns(database), setting!.autovacuum === 'on', `PostgreSQL with autovacuum ${setting!.autovacuum}`)
  }
  const silent = { ...database, kind: 'postgres' as const, db: { execute: () => Promise.reject(new Error('unavailable')) } as unknown as Database }
  t.equal(await autovacuumRuns(silent), true, 'a database that cannot say is taken to run it, as PostgreSQL does by default')
})
