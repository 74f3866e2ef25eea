// How the dispatcher fills its slots, on PGlite and on PostgreSQL (DATABASE_URL): a slot is
// filled as soon as it may be, never at the next poll (every test here polls once an hour), and
// no endpoint, however slow or deep its backlog, keeps the others' deliveries waiting. Receivers
// that hang never answer and their deadlines are fired only by the test, so what is checked is
// which deliveries were made while the others hung, never how long anything took.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { Database } from '../../src/db/client.js'
import { rowsOf } from '../../src/db/results.js'
import { DISPATCH_DEFAULTS } from '../../src/jobs/webhook-dispatcher.js'
import { startReceiver } from '../helpers/receiver.js'
import { createEndpoint, deliveryReaches, manualTimers, recordEvent, startDispatcher, waitUntil, webhookDatabase } from '../helpers/webhooks.js'

const { db } = await webhookDatabase()
const HOUR = 3_600_000

/**
 * Each test starts with nothing due: what an earlier test left pending (a hanging endpoint's
 * backlog, given back at its dispatcher's stop) would take slots here.
 */
async function nothingDue(): Promise<void> {
  await db.execute(sql`update webhook_deliveries set status = 'failed', next_attempt_at = null, claimed_until = null, claim_token = null where status = 'pending'`)
}

/** The test database, with the statements recording outcomes held until release(). */
function holdingRecords() {
  const state = { held: 0 }
  const waiting: (() => void)[] = []
  let holding = true
  const held = new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver)
      return async (query: { queryChunks?: unknown[] }) => {
        if (holding && JSON.stringify(query.queryChunks ?? '').includes('last_response_status = o.status')) {
          state.held++
          await new Promise<void>((resolve) => waiting.push(resolve))
        }
        return target.execute(query as never)
      }
    },
  }) as Database
  return {
    db: held,
    state,
    release() {
      holding = false
      for (const resolve of waiting.splice(0)) resolve()
    },
  }
}

t.test('a slot is filled as soon as its attempt ends: the endpoint’s next delivery goes before the first is recorded, without a poll', async (t) => {
  await nothingDue()
  const receiver = await startReceiver()
  const endpoint = await createEndpoint(receiver.url)
  const first = await recordEvent(endpoint)
  const second = await recordEvent(endpoint)
  const records = holdingRecords()
  await startDispatcher(t, { db: records.db, perEndpoint: 1, pollMs: HOUR })
  // One attempt at a time to the endpoint: the second comes once the first has ended, while the
  // first's outcome is still being written (held).
  await receiver.received(2)
  t.ok(records.state.held >= 1, 'the first outcome not yet written')
  records.release()
  await deliveryReaches(first.deliveryId, 'succeeded')
  await deliveryReaches(second.deliveryId, 'succeeded')
  t.equal(receiver.requests.length, 2)
})

t.test('an endpoint’s backlog, due first and at its limit, hides no other endpoint’s delivery', async (t) => {
  await nothingDue()
  const timers = manualTimers()
  const hanging = await startReceiver('hang')
  const slow = await createEndpoint(hanging.url)
  for (let i = 0; i < 8; i++) await recordEvent(slow)
  const healthy = await startReceiver()
  const { deliveryId } = await recordEvent(await createEndpoint(healthy.url))
  // Two slots, one attempt at a time to an endpoint: the hanging endpoint's eight are due first.
  await startDispatcher(t, { concurrency: 2, perEndpoint: 1, pollMs: HOUR, timers, drainMs: 0 })
  await deliveryReaches(deliveryId, 'succeeded')
  await hanging.received(1)
  t.equal(hanging.open(), 1, 'delivered while the hanging endpoint held its one attempt')
  t.equal(timers.pending(), 1, 'whose deadline never came')
})

/** How many of these deliveries have been claimed or made: attempted, or being attempted. */
async function attempted(ids: string[]): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from webhook_deliveries
      where id in (${sql.join(ids.map((id) => sql`${id}`), sql`, `)}) and (claim_token is not null or status = 'succeeded')`),
  )
  return Number(row!.n)
}

t.test('five tenants’ endpoints hang with a backlog each: a sixth tenant’s deliveries go before the hanging ones take every slot', async (t) => {
  await nothingDue()
  const timers = manualTimers()
  const hanging = await startReceiver('hang')
  for (let i = 0; i < 5; i++) {
    // Each in a project of its own: the per-project limit alone would not keep them from 5 × 8 slots.
    const endpoint = await createEndpoint(hanging.url)
    for (let j = 0; j < 8; j++) await recordEvent(endpoint)
  }
  const healthy = await startReceiver()
  const endpoint = await createEndpoint(healthy.url)
  const deliveries: string[] = []
  for (let j = 0; j < 16; j++) deliveries.push((await recordEvent(endpoint)).deliveryId)

  // The defaults: 32 slots, 8 to an endpoint, 8 to a project. The hanging endpoints' 40 due
  // deliveries, due first, are enough to take every slot, and in the end they do.
  await startDispatcher(t, { pollMs: HOUR, timers, drainMs: 0 })
  await hanging.received(DISPATCH_DEFAULTS.concurrency)
  t.equal(await attempted(deliveries), deliveries.length, 'by then every one of the healthy endpoint’s deliveries had been claimed')
  if ((await attempted(deliveries)) === deliveries.length) {
    for (const id of deliveries) await deliveryReaches(id, 'succeeded')
    t.equal(healthy.requests.length, deliveries.length, 'and made, while every slot it left hung')
  }
})

t.test('endpoints that hang and fail hold one slot each, however deep their backlogs', async (t) => {
  await nothingDue()
  const timers = manualTimers()
  const hanging = await startReceiver('hang')
  const failing: string[] = []
  for (let i = 0; i < 5; i++) {
    const endpoint = await createEndpoint(hanging.url)
    failing.push(endpoint.id)
    for (let j = 0; j < 8; j++) await recordEvent(endpoint)
  }
  // As the dispatcher leaves an endpoint whose attempt has failed.
  await db.execute(sql`update webhook_endpoints set failing_since = now() where id in (${sql.join(failing.map((id) => sql`${id}`), sql`, `)})`)
  const healthy = await startReceiver()
  const endpoint = await createEndpoint(healthy.url)
  const deliveries: string[] = []
  for (let j = 0; j < 16; j++) deliveries.push((await recordEvent(endpoint)).deliveryId)

  await startDispatcher(t, { pollMs: HOUR, timers, drainMs: 0 })
  for (const id of deliveries) await deliveryReaches(id, 'succeeded')
  await hanging.received(failing.length)
  t.equal(hanging.open(), failing.length, 'one attempt to each failing endpoint, still hanging')
  t.equal(timers.pending(), failing.length, 'whose deadlines never came')
})
