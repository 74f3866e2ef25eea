// Claiming and recording deliveries (src/db/repos/dispatch.ts), on PGlite and on PostgreSQL
// (DATABASE_URL): what a claim returns and holds, the per-endpoint limit, leases that run out,
// claims that have been taken over, and what an outcome does to the delivery and its endpoint.
// Times are the database's: a test reads now() before and after a statement and holds the
// result between the two, never to a duration of its own.
import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { claimQuery, dispatchRepo, parkDeliveries, unparkDeliveries, type ClaimedDelivery, type ClaimOptions, type Outcome } from '../../src/db/repos/dispatch.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { rowsOf } from '../../src/db/results.js'
import { projects, webhook_deliveries, webhook_endpoints } from '../../src/db/schema.js'
import { newWebhookSecret } from '../../src/domain/secrets.js'
import { retryDelay } from '../../src/jobs/webhook-dispatcher.js'
import { eventJson, EVENT_LOG_DAYS } from '../../src/webhooks/event-record.js'
import { explainPlan, indexScans } from '../helpers/db.js'
import { createEndpoint, deliveryRow, endpointRow, recordEvent, webhookDatabase, type EndpointRow } from '../helpers/webhooks.js'

const { db } = await webhookDatabase()
const repo = dispatchRepo(db)
const LEASE = 60_000
/** An attempt's deadline: a claim older than this is no attempt in flight. */
const ATTEMPT = 10_000

/** The database's time in whole milliseconds, as a Date read from it has (JavaScript drops the rest). */
const dbNow = async () => rowsOf<{ ms: number }>(await db.execute(sql`select floor(extract(epoch from now()) * 1000)::float8 as ms`))[0]!.ms
/** Claims, keeping these endpoints' deliveries and giving back the rest (earlier tests' deliveries that are still due). */
async function claimFor(endpoints: EndpointRow[], limits: Partial<ClaimOptions> = {}): Promise<ClaimedDelivery[]> {
  const ids = new Set(endpoints.map((e) => e.id))
  const { deliveries: claimed } = await repo.claim({ limit: 100, perEndpoint: 100, perFailingEndpoint: 100, perProject: 100, leaseMs: LEASE, attemptMs: ATTEMPT, ...limits })
  await repo.release(claimed.filter((c) => !ids.has(c.endpointId)))
  return claimed.filter((c) => ids.has(c.endpointId))
}
const claimOf = (endpoint: EndpointRow) => claimFor([endpoint])
const outcome = (claim: ClaimedDelivery, fields: Partial<Outcome>): Outcome => ({
  id: claim.id,
  token: claim.token,
  startedAt: claim.claimedAt,
  dueAt: claim.dueAt,
  status: 200,
  error: null,
  succeeded: true,
  gone: false,
  retryInMs: null,
  ...fields,
})
const failure = (claim: ClaimedDelivery, retryInMs: number | null = 60_000, status = 500): Outcome =>
  outcome(claim, { status, error: `answered ${status}`, succeeded: false, retryInMs })

t.test('a claim returns what the attempt needs, holds the delivery for the lease, and no second claim gets it', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/a')
  const { eventId, deliveryId } = await recordEvent(endpoint)
  const before = await dbNow()
  const [claim, ...more] = await claimOf(endpoint)
  const after = await dbNow()
  t.same(more, [])
  t.equal(claim!.id, deliveryId)
  t.equal(claim!.url, 'https://hooks.example.com/a')
  t.same(claim!.secrets, [endpoint.secret], 'one secret: no rotation')
  t.equal(claim!.eventId, eventId)
  t.equal(claim!.attempts, 0)
  const [event] = rowsOf<{ id: string; type: string; data: string; ms: number }>(
    await db.execute(sql`select id, type, data, (extract(epoch from created_at) * 1000)::float8 as ms from events where id = ${eventId}`),
  )
  t.equal(claim!.body, eventJson({ ...event!, created_at: new Date(event!.ms) }), 'the body is the event as the log holds it')
  t.ok(claim!.claimedAt.getTime() >= before && claim!.claimedAt.getTime() <= after, 'claimed at the database’s time')

  const row = await deliveryRow(deliveryId)
  t.equal(row.claim_token, claim!.token)
  t.ok(row.claimed_until!.getTime() >= before + LEASE && row.claimed_until!.getTime() <= after + LEASE, 'held for the lease')
  t.same(await claimOf(endpoint), [], 'a second claim does not get it')
})

t.test('a delivery whose event has left the event log is not claimed, pruned or not', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/aged')
  const { eventId } = await recordEvent(endpoint)
  const { deliveryId: kept } = await recordEvent(endpoint)
  // Its delivery's time is the event's (outbox.ts), and it has been due since.
  const aged = sql`now() - make_interval(days => ${EVENT_LOG_DAYS}, hours => 1)`
  await db.execute(sql`update events set created_at = ${aged} where id = ${eventId}`)
  await db.execute(sql`update webhook_deliveries set created_at = ${aged}, next_attempt_at = ${aged} where event_id = ${eventId}`)
  t.same((await claimOf(endpoint)).map((claim) => claim.id), [kept], 'only the delivery of the event still in the log')
})

t.test('after a rotation both secrets, new first, until the old one expires', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/rotated')
  const previous = newWebhookSecret()
  await db
    .update(webhook_endpoints)
    .set({ previous_secret: previous, previous_secret_expires_at: sql`now() + interval '1 day'` })
    .where(eq(webhook_endpoints.id, endpoint.id))
  await recordEvent(endpoint)
  const [claim] = await claimOf(endpoint)
  t.same(claim!.secrets, [endpoint.secret, previous])
  await repo.release([claim!])

  await db.update(webhook_endpoints).set({ previous_secret_expires_at: sql`now() - interval '1 second'` }).where(eq(webhook_endpoints.id, endpoint.id))
  const [again] = await claimOf(endpoint)
  t.same(again!.secrets, [endpoint.secret], 'the old secret no longer signs once expired')
})

t.test('a lease that ran out: another claim takes the delivery, and the first claim’s outcome changes nothing', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/lease')
  const { deliveryId } = await recordEvent(endpoint)
  const [first] = await claimOf(endpoint)
  // The instance that claimed it died: its lease runs out.
  await db.update(webhook_deliveries).set({ claimed_until: sql`now() - interval '1 millisecond'` }).where(eq(webhook_deliveries.id, deliveryId))
  const [second] = await claimOf(endpoint)
  t.equal(second!.id, deliveryId, 'claimed again')
  t.not(second!.token, first!.token, 'under a new claim')

  const stale = await repo.record([failure(first!)])
  t.same(stale.deliveries, [], 'the late outcome is dropped')
  t.match(await deliveryRow(deliveryId), { status: 'pending', attempts: 0, claim_token: second!.token })

  const recorded = await repo.record([outcome(second!, {})])
  t.same(recorded.deliveries, [{ id: deliveryId, status: 'succeeded' }])
  t.match(await deliveryRow(deliveryId), { status: 'succeeded', attempts: 1, claim_token: null, claimed_until: null })
})

/** POST .../retry, as the API makes it (its repository operation, in a transaction of its own). */
async function retry(endpoint: EndpointRow, deliveryId: string): Promise<Date> {
  const retried = await makeRepos(db).transaction((tx) => tx.webhooks.retry(endpoint.project_id, endpoint.id, deliveryId))
  if (retried.outcome !== 'retried') throw new Error(`retry: ${retried.outcome}`)
  return retried.row.next_attempt_at!
}

t.test('a retry asked for while an attempt was in flight is kept, whatever the attempt came to', async (t) => {
  const cases: [string, (claim: ClaimedDelivery) => Outcome, Record<string, unknown>][] = [
    ['failed, attempts left', (claim) => failure(claim, 3_600_000), { last_response_status: 500, last_error: 'answered 500' }],
    ['failed, the schedule spent', (claim) => failure(claim, null), { last_response_status: 500 }],
    ['succeeded', (claim) => outcome(claim, {}), { last_response_status: 200, last_error: null }],
  ]
  for (const [what, result, fields] of cases) {
    const endpoint = await createEndpoint('https://hooks.example.com/retried')
    const { deliveryId } = await recordEvent(endpoint)
    const [claim] = await claimOf(endpoint)
    const asked = await retry(endpoint, deliveryId)
    t.same(await claimOf(endpoint), [], `${what}: no second attempt while the first is in flight`)
    t.same((await repo.record([result(claim!)])).deliveries, [{ id: deliveryId, status: 'pending' }], `${what}: still pending`)
    const row = await deliveryRow(deliveryId)
    t.match(row, { status: 'pending', attempts: 1, claimed_until: null, claim_token: null, ...fields }, `${what}: the attempt made is counted`)
    t.equal(row.next_attempt_at?.getTime(), asked.getTime(), `${what}: due when the retry asked`)
    t.equal((await claimOf(endpoint))[0]?.id, deliveryId, `${what}: and claimed at once`)
  }
})

t.test('a retry is no retry for an endpoint that answered 410 meanwhile; without a retry, the outcome’s own schedule', async (t) => {
  const gone = await createEndpoint('https://hooks.example.com/retried-gone')
  const { deliveryId } = await recordEvent(gone)
  const [claim] = await claimOf(gone)
  await retry(gone, deliveryId)
  await repo.record([outcome(claim!, { status: 410, error: 'x', succeeded: false, gone: true })])
  t.match(await deliveryRow(deliveryId), { status: 'failed', next_attempt_at: null }, 'a disabled endpoint is sent nothing')

  const plain = await createEndpoint('https://hooks.example.com/not-retried')
  const { deliveryId: other } = await recordEvent(plain)
  const [attempt] = await claimOf(plain)
  const before = await dbNow()
  await repo.record([failure(attempt!, 3_600_000)])
  t.ok((await deliveryRow(other)).next_attempt_at!.getTime() >= before + 3_600_000, 'due after the wait')
})

t.test('per endpoint: at most perEndpoint in flight, counting the claims already held', async (t) => {
  const busy = await createEndpoint('https://hooks.example.com/busy')
  const quiet = await createEndpoint('https://hooks.example.com/quiet')
  for (let i = 0; i < 6; i++) await recordEvent(busy)
  await recordEvent(quiet)
  const claims = await claimFor([busy, quiet], { perEndpoint: 2 })
  t.equal(claims.filter((c) => c.endpointId === busy.id).length, 2, 'two of the busy endpoint’s six')
  t.equal(claims.filter((c) => c.endpointId === quiet.id).length, 1, 'and the quiet one’s')
  t.same(await claimFor([busy], { perEndpoint: 2 }), [], 'none more while two are in flight')
  await repo.record([outcome(claims.find((c) => c.endpointId === busy.id)!, {})])
  const next = await claimFor([busy], { perEndpoint: 2 })
  t.equal(next.length, 1, 'one more once one has ended')
  await repo.release([...claims, ...next])
})

t.test('per endpoint: an attempt this instance has seen end (its outcome not yet recorded) no longer fills a slot', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/ended')
  for (let i = 0; i < 3; i++) await recordEvent(endpoint)
  const [first] = await claimFor([endpoint], { perEndpoint: 1 })
  t.same(await claimFor([endpoint], { perEndpoint: 1 }), [], 'its one slot taken')
  const next = await claimFor([endpoint], { perEndpoint: 1, ended: [first!.id] })
  t.equal(next.length, 1, 'the next once the first has ended')
  t.not(next[0]!.id, first!.id, 'not the one whose claim still holds')
  await repo.release([first!, ...next])
})

t.test('per endpoint: a claim older than an attempt’s deadline (its instance died mid-attempt) keeps its delivery, but no longer fills a slot', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/orphaned')
  for (let i = 0; i < 3; i++) await recordEvent(endpoint)
  const orphaned = await claimFor([endpoint], { perEndpoint: 2 })
  t.equal(orphaned.length, 2, 'both slots taken')
  // The instance that claimed them died a moment after the attempts' deadline: their leases hold.
  await db
    .update(webhook_deliveries)
    .set({ claimed_until: sql`now() + ${LEASE - ATTEMPT - 1}::int * interval '1 millisecond'` })
    .where(sql`${webhook_deliveries.id} in (${sql.join(orphaned.map((c) => sql`${c.id}`), sql`, `)})`)
  const next = await claimFor([endpoint], { perEndpoint: 2 })
  t.equal(next.length, 1, 'the endpoint’s third delivery is claimed: no attempt is in flight to it')
  t.notOk(next.some((n) => orphaned.some((c) => c.id === n.id)), 'not one of those whose lease still holds')
  await repo.release([...orphaned, ...next])
})

/** Earlier tests' deliveries that are still due would take places in a claim's batch: for the tests whose batch is smaller than what is due. */
async function nothingElseDue(): Promise<void> {
  await db.execute(sql`update webhook_deliveries set status = 'failed', next_attempt_at = null, claimed_until = null, claim_token = null where status = 'pending'`)
}

t.test('a failing endpoint (failing_since set): one attempt in flight at a time', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/probing')
  await db.update(webhook_endpoints).set({ failing_since: sql`now() - interval '1 hour'` }).where(eq(webhook_endpoints.id, endpoint.id))
  for (let i = 0; i < 3; i++) await recordEvent(endpoint)
  const limits = { perEndpoint: 8, perFailingEndpoint: 1 }
  const [first, ...more] = await claimFor([endpoint], limits)
  t.same(more, [], 'one of its three')
  t.same(await claimFor([endpoint], limits), [], 'none more while it is in flight')
  await repo.record([failure(first!)])
  t.equal((await claimFor([endpoint], limits)).length, 1, 'the next once it has failed')
})

t.test('per project: at most perProject in flight over all its endpoints, each endpoint’s first deliveries first', async (t) => {
  const first = await createEndpoint('https://hooks.example.com/tenant-1')
  const endpoints = [first]
  for (let i = 2; i <= 3; i++) endpoints.push(await createEndpoint(`https://hooks.example.com/tenant-${i}`, { projectId: first.project_id }))
  for (const endpoint of endpoints) for (let i = 0; i < 4; i++) await recordEvent(endpoint)
  const other = await createEndpoint('https://hooks.example.com/another-tenant')
  await recordEvent(other)
  const limits = { perEndpoint: 8, perProject: 5 }
  const claims = await claimFor([...endpoints, other], limits)
  const of = (endpoint: EndpointRow, among = claims) => among.filter((c) => c.endpointId === endpoint.id).length
  t.same(
    endpoints.map((e) => of(e)).sort(),
    [1, 2, 2],
    'five of the project’s twelve, each of its endpoints served',
  )
  t.equal(of(other), 1, 'and another project’s delivery')
  t.same(await claimFor(endpoints, limits), [], 'none more of the project while five are in flight')
  await repo.record([outcome(claims.find((c) => c.endpointId === endpoints[0]!.id)!, {})])
  t.equal((await claimFor(endpoints, limits)).length, 1, 'one more once one has ended')
})

t.test('an endpoint with nothing in flight gets one attempt, though its project’s others hold all of its room', async (t) => {
  // An endpoint that hangs holds its project's every slot for 10 s before its attempts fail; its
  // siblings' events waited for them, past the contract's 2 s (found by an outside review).
  const hanging = await createEndpoint('https://hooks.example.com/hangs')
  for (let i = 0; i < 10; i++) await recordEvent(hanging)
  const limits = { perEndpoint: 8, perProject: 8 }
  t.equal((await claimFor([hanging], limits)).length, 8, 'the hanging endpoint takes the project’s eight')
  const healthy = await createEndpoint('https://hooks.example.com/healthy', { projectId: hanging.project_id })
  for (let i = 0; i < 3; i++) await recordEvent(healthy)
  const [first, ...more] = await claimFor([hanging, healthy], limits)
  t.equal(first?.endpointId, healthy.id, 'one for the idle sibling')
  t.same(more, [], 'and only one: the project is over its room')
  t.same(await claimFor([hanging, healthy], limits), [], 'none more while it is in flight')
  await repo.record([outcome(first!, {})])
  t.same((await claimFor([hanging, healthy], limits)).map((c) => c.endpointId), [healthy.id], 'the next once it has ended')
})

t.test('a batch takes every endpoint’s first delivery before any endpoint’s second, whatever their due times', async (t) => {
  await nothingElseDue()
  const backlog = await createEndpoint('https://hooks.example.com/backlog')
  for (let i = 0; i < 6; i++) await recordEvent(backlog)
  const later = await createEndpoint('https://hooks.example.com/later')
  for (let i = 0; i < 2; i++) await recordEvent(later)
  const claims = await claimFor([backlog, later], { limit: 4 })
  t.same(
    claims.map((c) => c.endpointId).sort(),
    [backlog.id, backlog.id, later.id, later.id].sort(),
    'two each, though the six of the backlog were due first',
  )
})

t.test('a deep backlog due first, with room to spare, hides no other endpoint’s delivery from a small batch', async (t) => {
  await nothingElseDue()
  const deep = await createEndpoint('https://hooks.example.com/deep')
  for (let i = 0; i < 40; i++) await recordEvent(deep)
  const behind = await createEndpoint('https://hooks.example.com/behind')
  const { deliveryId } = await recordEvent(behind)
  const claims = await claimFor([deep, behind], { limit: 2, perEndpoint: 8 })
  t.same(
    claims.map((c) => c.endpointId).sort(),
    [deep.id, behind.id].sort(),
    'one of the forty, and the one due after all of them',
  )
  t.ok(claims.some((c) => c.id === deliveryId))
})

t.test('a disabled endpoint’s deliveries are not claimed, and are once it is enabled again', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/disabled')
  const { deliveryId } = await recordEvent(endpoint)
  await db.update(webhook_endpoints).set({ enabled: false }).where(eq(webhook_endpoints.id, endpoint.id))
  t.same(await claimOf(endpoint), [])
  await db.update(webhook_endpoints).set({ enabled: true }).where(eq(webhook_endpoints.id, endpoint.id))
  t.equal((await claimOf(endpoint))[0]?.id, deliveryId)
})

t.test('while the project’s beta feature is off, its beta events’ deliveries are not claimed; they are once it is on', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/beta-switch')
  const repos = makeRepos(db)
  const beta = await repos.transaction((tx) => tx.outbox.record(endpoint.project_id, 'beta_tester.joined', { id: 'bt_AAAAAAAAAAAAAAAAAAAAA' }))
  const { deliveryId: other } = await recordEvent(endpoint)
  const [betaDelivery] = await db.select({ id: webhook_deliveries.id }).from(webhook_deliveries).where(eq(webhook_deliveries.event_id, beta.id))
  await db.update(projects).set({ beta_enabled: false }).where(eq(projects.id, endpoint.project_id))
  const claimed = await claimOf(endpoint)
  t.same(claimed.map((c) => c.id), [other], 'the webhook.test delivery alone')
  await repo.record(claimed.map((c) => outcome(c, {})))
  t.match(await deliveryRow(betaDelivery!.id), { status: 'pending', attempts: 0, claimed_until: null }, 'the beta one waits, pending, never attempted')
  await db.update(projects).set({ beta_enabled: true }).where(eq(projects.id, endpoint.project_id))
  t.same((await claimOf(endpoint)).map((c) => c.id), [betaDelivery!.id], 'and goes once the feature is on again')
})

t.test('a failure: attempts, last_*, the next attempt after the wait, and failing_since from the first failure', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/failing')
  const { deliveryId } = await recordEvent(endpoint)
  const [claim] = await claimOf(endpoint)
  const before = await dbNow()
  await repo.record([failure(claim!, 5000, 503)])
  const after = await dbNow()
  const row = await deliveryRow(deliveryId)
  t.match(row, { status: 'pending', attempts: 1, last_response_status: 503, last_error: 'answered 503', claimed_until: null, claim_token: null })
  t.equal(row.last_attempt_at!.getTime(), claim!.claimedAt.getTime(), 'last_attempt_at: when the attempt began')
  t.ok(row.next_attempt_at!.getTime() >= before + 5000 && row.next_attempt_at!.getTime() <= after + 5000, 'due again after the wait')
  t.equal((await endpointRow(endpoint.id)).failing_since?.getTime(), claim!.claimedAt.getTime(), 'failing since that attempt')

  // A second failure keeps the first one's time.
  await db.update(webhook_deliveries).set({ next_attempt_at: sql`now()` }).where(eq(webhook_deliveries.id, deliveryId))
  const [second] = await claimOf(endpoint)
  t.equal(second!.attempts, 1)
  await repo.record([failure(second!, null)])
  t.match(await deliveryRow(deliveryId), { status: 'failed', attempts: 2, next_attempt_at: null }, 'the schedule spent: failed')
  t.equal((await endpointRow(endpoint.id)).failing_since?.getTime(), claim!.claimedAt.getTime(), 'still failing since the first')

  // A success clears it.
  const { deliveryId: next } = await recordEvent(endpoint)
  const [third] = await claimOf(endpoint)
  t.equal(third!.id, next)
  await repo.record([outcome(third!, {})])
  t.match(await deliveryRow(next), { status: 'succeeded', attempts: 1, last_response_status: 200, last_error: null, next_attempt_at: null })
  t.equal((await endpointRow(endpoint.id)).failing_since, null, 'a success clears failing_since')
})

t.test('outcomes of one endpoint recorded together: the latest success counts, and failures after it', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/batch')
  for (let i = 0; i < 3; i++) await recordEvent(endpoint)
  const claims = await claimOf(endpoint)
  t.equal(claims.length, 3)
  const at = (claim: ClaimedDelivery, ms: number) => ({ ...claim, claimedAt: new Date(claim.claimedAt.getTime() + ms) })
  await repo.record([failure(at(claims[0]!, 0)), outcome(at(claims[1]!, 1), {}), failure(at(claims[2]!, 2))])
  t.equal((await endpointRow(endpoint.id)).failing_since?.getTime(), claims[2]!.claimedAt.getTime() + 2, 'failing since the failure after the success')
})

t.test('410 Gone: the endpoint is disabled (gone) and the delivery failed, schedule or not', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/gone')
  const { deliveryId } = await recordEvent(endpoint)
  const [claim] = await claimOf(endpoint)
  const recorded = await repo.record([outcome(claim!, { status: 410, error: 'answered 410 Gone: the endpoint is disabled', succeeded: false, gone: true, retryInMs: 5000 })])
  t.same(recorded.disabled, [{ id: endpoint.id, reason: 'gone' }])
  t.match(await deliveryRow(deliveryId), { status: 'failed', attempts: 1, last_response_status: 410, next_attempt_at: null })
  const row = await endpointRow(endpoint.id)
  t.match(row, { enabled: false, disabled_reason: 'gone' })
  t.ok(row.updated_at.getTime() > endpoint.updated_at.getTime(), 'updated_at moves')
})

t.test('an endpoint the team disabled while an attempt was in flight keeps its null reason on a 410', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/team-disabled')
  await recordEvent(endpoint)
  const [claim] = await claimOf(endpoint)
  await db.update(webhook_endpoints).set({ enabled: false }).where(eq(webhook_endpoints.id, endpoint.id))
  const recorded = await repo.record([outcome(claim!, { status: 410, error: 'x', succeeded: false, gone: true })])
  t.same(recorded.disabled, [])
  t.match(await endpointRow(endpoint.id), { enabled: false, disabled_reason: null })
})

t.test('every attempt failed for 5 days: the next failure disables the endpoint (failing); a success the day before resets the count', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/five-days')
  await db.update(webhook_endpoints).set({ failing_since: sql`now() - interval '5 days 1 minute'` }).where(eq(webhook_endpoints.id, endpoint.id))
  const { deliveryId } = await recordEvent(endpoint)
  const [claim] = await claimOf(endpoint)
  const recorded = await repo.record([failure(claim!)])
  t.same(recorded.disabled, [{ id: endpoint.id, reason: 'failing' }])
  t.match(await endpointRow(endpoint.id), { enabled: false, disabled_reason: 'failing' })
  t.match(await deliveryRow(deliveryId), { status: 'pending', attempts: 1 }, 'the delivery waits, pending, for the endpoint to be enabled')

  const younger = await createEndpoint('https://hooks.example.com/four-days')
  await db.update(webhook_endpoints).set({ failing_since: sql`now() - interval '4 days 23 hours'` }).where(eq(webhook_endpoints.id, younger.id))
  await recordEvent(younger)
  const [young] = await claimOf(younger)
  t.same((await repo.record([failure(young!)])).disabled, [], 'under 5 days: still enabled')
  t.match(await endpointRow(younger.id), { enabled: true, disabled_reason: null })
})

t.test('release gives claims back, due at once; a claim taken over since is left alone', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/release')
  const { deliveryId } = await recordEvent(endpoint)
  const [claim] = await claimOf(endpoint)
  await repo.release([{ id: claim!.id, token: 'another claim' }])
  t.equal((await deliveryRow(deliveryId)).claim_token, claim!.token, 'not released under another token')
  await repo.release([claim!])
  t.match(await deliveryRow(deliveryId), { status: 'pending', attempts: 0, claimed_until: null, claim_token: null })
  t.equal((await claimOf(endpoint))[0]?.id, deliveryId)
})

t.test('the claim reads each endpoint’s due deliveries from the endpoint due index, by next_attempt_at: a parked one (null) is not in it', async (t) => {
  const plan = await explainPlan(claimQuery({ limit: 32, perEndpoint: 8, perFailingEndpoint: 1, perProject: 8, leaseMs: LEASE, attemptMs: ATTEMPT }, 'token'))
  const scans = indexScans(plan).filter((s) => s.index === 'webhook_deliveries_endpoint_due_idx')
  t.ok(
    scans.some((s) => /^\(\(endpoint_id = e\.id\) AND \(next_attempt_at <= now\(\)\)\)$/.test(s.cond)),
    'an endpoint’s due deliveries: both columns as index conditions, not a filter',
  )
})

t.test('an endpoint disabled by an answer (410) or by the team during an attempt: its pending deliveries are parked, and come back due when it is enabled', async (t) => {
  const gone = await createEndpoint('https://hooks.example.com/parked-gone')
  const team = await createEndpoint('https://hooks.example.com/parked-team')
  for (const endpoint of [gone, team]) for (let i = 0; i < 3; i++) await recordEvent(endpoint)
  const [goneClaim] = await claimFor([gone], { perEndpoint: 1 })
  const [teamClaim] = await claimFor([team], { perEndpoint: 1 })
  // The team disables its endpoint meanwhile (PATCH): the deliveries no attempt holds are parked at once.
  await db.update(webhook_endpoints).set({ enabled: false }).where(eq(webhook_endpoints.id, team.id))
  t.equal(await parkDeliveries(db, [team.id]), 2, 'two parked by the PATCH; the one in flight is left to its attempt')

  const recorded = await repo.record([outcome(goneClaim!, { status: 410, error: 'x', succeeded: false, gone: true }), failure(teamClaim!)])
  t.same(recorded.toPark.sort(), [gone.id, team.id].sort(), 'both endpoints may need parking')
  t.match(await deliveryRow(teamClaim!.id), { status: 'pending', attempts: 1 }, 'the failed attempt is recorded')
  t.equal(await repo.park(recorded.toPark), 3, 'the gone endpoint’s two, and the team’s one that was in flight')
  const rows = await db.select().from(webhook_deliveries).where(sql`${webhook_deliveries.endpoint_id} in (${gone.id}, ${team.id})`)
  t.same(
    rows.filter((r) => r.id !== goneClaim!.id).map((r) => [r.status, r.next_attempt_at]),
    Array(5).fill(['pending', null]),
    'pending, next_attempt_at null',
  )
  t.same(await claimFor([gone, team]), [], 'never claimed')

  await db.update(webhook_endpoints).set({ enabled: true }).where(eq(webhook_endpoints.id, team.id))
  t.equal(await unparkDeliveries(db, team.id), 3, 'enabled again: due now')
  t.equal((await claimFor([gone, team])).length, 3, 'and claimed')
  t.equal(await parkDeliveries(db, [team.id]), 0, 'an enabled endpoint’s deliveries are never parked')
})

t.test('a delivery parked while its attempt was in flight stays parked whatever the attempt came to', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/parked-in-flight')
  const { deliveryId } = await recordEvent(endpoint)
  const [claim] = await claimOf(endpoint)
  await db.update(webhook_endpoints).set({ enabled: false }).where(eq(webhook_endpoints.id, endpoint.id))
  await db.update(webhook_deliveries).set({ next_attempt_at: null }).where(eq(webhook_deliveries.id, deliveryId))
  await repo.record([failure(claim!)])
  t.match(await deliveryRow(deliveryId), { status: 'pending', attempts: 1, next_attempt_at: null })
})

t.test('analyze gives the planner the deliveries’ statistics (PGlite keeps none by itself)', async (t) => {
  const endpoint = await createEndpoint('https://hooks.example.com/analyze')
  for (let i = 0; i < 5; i++) await recordEvent(endpoint)
  await repo.analyze()
  const [stats] = rowsOf<{ tuples: number }>(await db.execute(sql`select reltuples::float8 as tuples from pg_class where relname = 'webhook_deliveries'`))
  const [count] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from webhook_deliveries`))
  t.equal(Number(stats!.tuples), Number(count!.n), 'the row count is known')
})

t.test('the retry schedule: one wait per retry, up to 10 % more, then spent', async (t) => {
  const schedule = [1000, 5000]
  t.equal(retryDelay(1, schedule, () => 0), 1000)
  t.equal(retryDelay(1, schedule, () => 0.999999), 1100)
  t.equal(retryDelay(2, schedule, () => 0.5), 5250)
  t.equal(retryDelay(3, schedule, () => 0), undefined, 'after the first attempt and two retries')
})
