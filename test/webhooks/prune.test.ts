// Pruning (src/jobs/event-pruning.ts): events older than 30 days go, their deliveries with
// them, in bounded batches; recent ones stay. Old events are written straight to the table.
// Previous secrets past their 24 hours are cleared by the same runs.
import { eq, inArray, sql, type SQL } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { makeRepos, type Repos } from '../../src/db/repos/index.js'
import type { DeliveryPosition } from '../../src/db/repos/webhooks.js'
import { events, idempotency_keys, webhook_deliveries, webhook_endpoints } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { newWebhookSecret } from '../../src/domain/secrets.js'
import { eventPruning } from '../../src/jobs/event-pruning.js'
import { createProject } from '../helpers/app.js'
import { explainPlan, indexScans, testDatabase } from '../helpers/db.js'
import { logSink, subscribe } from '../helpers/events.js'

/** An event `age` ago (an SQL interval) with a delivery to `endpointId`; returns its id. */
async function eventAged(projectId: string, endpointId: string, age: string): Promise<string> {
  const { db } = await testDatabase()
  const id = newId('evt')
  const at = sql`now() - ${sql.raw(`interval '${age}'`)}`
  await db.insert(events).values({ id, project_id: projectId, type: 'beta_tester.enrolled', data: '{}', created_at: at })
  await db.insert(webhook_deliveries).values({ id: newId('wd'), project_id: projectId, endpoint_id: endpointId, event_id: id, event_type: 'beta_tester.enrolled', next_attempt_at: at, created_at: at })
  return id
}

async function remaining(ids: string[]) {
  const { db } = await testDatabase()
  const kept = await db.select({ id: events.id }).from(events).where(inArray(events.id, ids))
  const deliveries = await db.select({ event_id: webhook_deliveries.event_id }).from(webhook_deliveries).where(inArray(webhook_deliveries.event_id, ids))
  return { events: kept.map((row) => row.id).sort(), deliveries: deliveries.map((row) => row.event_id).sort() }
}

/** A batch step that notes each statement's size in `statements`, and holds it to its batch. */
function noted(t: Test, step: (limit: number) => Promise<number>, statements: number[]) {
  return async (limit: number) => {
    const deleted = await step(limit)
    t.ok(deleted <= limit, 'a statement deletes at most its batch')
    statements.push(deleted)
    return deleted
  }
}

/** The repositories, with each pruning statement's size noted. */
async function counted(t: Test): Promise<{ repos: Repos; statements: number[] }> {
  const real = makeRepos((await testDatabase()).db)
  const statements: number[] = []
  return { repos: { ...real, outbox: { ...real.outbox, pruneExpired: noted(t, real.outbox.pruneExpired, statements) } }, statements }
}

t.test('events older than 30 days go with their deliveries, a bounded batch a statement; recent ones stay', async (t) => {
  const project = await createProject()
  const endpoint = await subscribe(project.id)
  const old: string[] = []
  for (const age of ['31 days', '40 days', '1 year', '30 days 1 hour', '90 days']) old.push(await eventAged(project.id, endpoint, age))
  const recent: string[] = []
  for (const age of ['29 days 23 hours', '1 day', '0 seconds']) recent.push(await eventAged(project.id, endpoint, age))

  const { repos, statements } = await counted(t)
  const deleted = await eventPruning({ repos, log: logSink().log, batch: 2 }).runOnce()
  t.ok(deleted >= old.length, 'every expired event (other projects’ included)')
  t.ok(statements.length >= 3, `in statements of 2 at most: ${statements.join(', ')}`)
  t.ok(statements.at(-1)! < 2, 'until one finds less than a full batch')
  t.same(await remaining([...old, ...recent]), { events: [...recent].sort(), deliveries: [...recent].sort() })

  t.equal(await eventPruning({ repos, log: logSink().log }).runOnce(), 0, 'nothing left to prune')
})

t.test('instances pruning at once delete everything expired, once, without error', async (t) => {
  const project = await createProject()
  const endpoint = await subscribe(project.id)
  const old: string[] = []
  for (let i = 0; i < 40; i++) old.push(await eventAged(project.id, endpoint, `${31 + i} days`))
  const kept = await eventAged(project.id, endpoint, '1 hour')
  const { lines, log } = logSink()
  const repos = makeRepos((await testDatabase()).db)
  const counts = await Promise.all(Array.from({ length: 3 }, () => eventPruning({ repos, log, batch: 4 }).runOnce()))
  t.ok(counts.reduce((a, b) => a + b, 0) >= old.length, `${counts.join(' + ')} deleted`)
  t.same(await remaining([...old, kept]), { events: [kept], deliveries: [kept] })
  t.same(lines, [])
})

t.test("pruning's claim reads the oldest events from events_created_idx", async (t) => {
  const { db } = await testDatabase()
  const scans = indexScans(await explainPlan(makeRepos(db).outbox.expiredClaim(500)))
  t.ok(scans.some((scan) => scan.index === 'events_created_idx'), 'events_created_idx, not a scan of the whole log')
})

t.test('a previous secret past its 24 hours is cleared, in batches; one still valid, or none, is left alone', async (t) => {
  const { db } = await testDatabase()
  const project = await createProject()
  const endpoint = (previous: string | null, expires: SQL | null) => ({
    id: newId('we'),
    project_id: project.id,
    url: 'https://hooks.example.com/rotated',
    secret: newWebhookSecret(),
    previous_secret: previous,
    previous_secret_expires_at: expires,
  })
  const expired = [
    endpoint(newWebhookSecret(), sql`now() - interval '1 second'`),
    endpoint(newWebhookSecret(), sql`now() - interval '3 days'`),
    endpoint(newWebhookSecret(), sql`now()`),
  ]
  const valid = endpoint(newWebhookSecret(), sql`now() + interval '23 hours'`)
  const never = endpoint(null, null)
  await db.insert(webhook_endpoints).values([...expired, valid, never])
  const before = await db.select().from(webhook_endpoints).where(eq(webhook_endpoints.project_id, project.id))

  await eventPruning({ repos: makeRepos(db), log: logSink().log, batch: 2 }).runOnce()
  const after = new Map((await db.select().from(webhook_endpoints).where(eq(webhook_endpoints.project_id, project.id))).map((row) => [row.id, row]))
  for (const row of expired) {
    t.match(after.get(row.id), { previous_secret: null, previous_secret_expires_at: null, secret: row.secret }, 'expired: cleared, the secret kept')
  }
  t.match(after.get(valid.id), { previous_secret: valid.previous_secret, secret: valid.secret }, 'still valid: kept')
  t.ok(after.get(valid.id)!.previous_secret_expires_at, 'with its expiry')
  t.match(after.get(never.id), { previous_secret: null, secret: never.secret })
  for (const row of before) t.equal(after.get(row.id)!.updated_at.getTime(), row.updated_at.getTime(), 'updated_at (and so the ETag) unchanged')
})

t.test("the expired secrets' claim reads webhook_endpoints_previous_secret_idx", async (t) => {
  const { db } = await testDatabase()
  const scans = indexScans(await explainPlan(makeRepos(db).webhooks.expiredSecretsClaim(500)))
  t.ok(scans.some((scan) => scan.index === 'webhook_endpoints_previous_secret_idx'), 'the partial index, not a scan of every endpoint')
})

t.test("deleted endpoints' deliveries go in bounded batches, each from where the last ended; other endpoints' stay", async (t) => {
  const { db } = await testDatabase()
  const project = await createProject()
  const [a, b, kept] = [await subscribe(project.id), await subscribe(project.id), await subscribe(project.id)]
  const made: Record<string, string[]> = { [a]: [], [b]: [], [kept]: [] }
  for (const [endpoint, n] of [[a, 5], [b, 2], [kept, 1]] as const) {
    for (let i = 0; i < n; i++) made[endpoint]!.push(await eventAged(project.id, endpoint, `${i + 1} hours`))
  }
  const real = makeRepos(db)
  for (const endpoint of [a, b]) t.equal(await real.webhooks.delete(project.id, endpoint), 'deleted')
  const found = await real.webhooks.deletedWithDeliveries()
  t.ok([a, b].every((id) => found.includes(id)) && !found.includes(kept), 'the deleted endpoints are found by their deliveries, the kept one is not')

  const batches: { endpointId: string; before?: DeliveryPosition; deleted: number }[] = []
  const webhooks = {
    ...real.webhooks,
    async purgeDeliveriesOf(endpointId: string, before: DeliveryPosition | undefined, limit: number) {
      const result = await real.webhooks.purgeDeliveriesOf(endpointId, before, limit)
      t.ok(result.deleted <= limit, 'a statement deletes at most its batch')
      batches.push({ endpointId, before, deleted: result.deleted })
      return result
    },
  }
  await eventPruning({ repos: { ...real, webhooks }, log: logSink().log, batch: 2 }).runOnce()
  const ofA = batches.filter((batch) => batch.endpointId === a)
  t.same(ofA.map((batch) => batch.deleted), [2, 2, 1], "a's 5 deliveries in batches of 2, until one finds less than a full batch")
  t.same(ofA[0]!.before, undefined, 'the first batch starts at the newest')
  t.ok(ofA.slice(1).every((batch) => batch.before !== undefined), 'each next one from where the one before ended')
  const all = Object.values(made).flat()
  t.same(await remaining(all), { events: [...all].sort(), deliveries: made[kept] }, "the kept endpoint's delivery, and every event, stay")
  t.same((await real.webhooks.deletedWithDeliveries()).filter((id) => id === a || id === b), [], 'nothing is left to purge')
})

t.test("the purge's queries read indexes: one probe an endpoint, and a batch from where the last ended", async (t) => {
  const { db } = await testDatabase()
  const repos = makeRepos(db)
  const found = indexScans(await explainPlan(repos.webhooks.deletedWithDeliveriesQuery))
  t.ok(found.some((scan) => /^webhook_deliveries_endpoint_/.test(scan.index)), 'endpoint ids from the deliveries\' endpoint index')
  const before = { at: new Date('2026-01-01T00:00:00.000Z'), id: 'wd_zzzzzzzzzzzzzzzzzzzzz' }
  const batch = indexScans(await explainPlan(repos.webhooks.purgeClaim('we_AAAAAAAAAAAAAAAAAAAAA', before, 500)))
  const scan = batch.find((s) => s.index === 'webhook_deliveries_endpoint_created_idx')
  t.ok(scan, 'a batch reads webhook_deliveries_endpoint_created_idx')
  t.match(scan?.cond, /ROW\(created_at, id\) < ROW\(/, 'starting where the last batch ended (an index condition, not a filter)')
})

t.test('Idempotency-Key records past their 24 hours go, a bounded batch a statement; recent ones stay', async (t) => {
  // They were deleted all at once inside one write request's transaction in a hundred: a random
  // write paid for the whole day's keys (found by a takeover review).
  const { id: projectId } = await createProject()
  const { db } = await testDatabase()
  const aged = (key: string, age: string) =>
    db.insert(idempotency_keys).values({ scope: projectId, key, request_hash: 'x', state: 'done', response_status: 201, response_body: '{}', created_at: sql`now() - ${sql.raw(`interval '${age}'`)}` })
  for (const [key, age] of [['old-1', '25 hours'], ['old-2', '2 days'], ['old-3', '24 hours 1 minute'], ['new-1', '23 hours'], ['new-2', '0 seconds']] as const) await aged(key, age)
  const real = makeRepos(db)
  const statements: number[] = []
  const repos = { ...real, idempotency: { ...real.idempotency, purgeExpired: noted(t, real.idempotency.purgeExpired, statements) } }
  await eventPruning({ repos, log: logSink().log, batch: 2 }).runOnce()
  t.ok(statements.length >= 2, `in statements of 2 at most: ${statements.join(', ')}`)
  const kept = await db.select({ key: idempotency_keys.key }).from(idempotency_keys).where(eq(idempotency_keys.scope, projectId))
  t.same(kept.map((row) => row.key).sort(), ['new-1', 'new-2'])
})
