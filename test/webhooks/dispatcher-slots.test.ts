// How the dispatcher fills its slots, on PGlite and on PostgreSQL (DATABASE_URL): a slot is
// filled as soon as it may be, never at the next poll (every test here polls once an hour), and
// no endpoint, however slow or deep its backlog, keeps the others' deliveries waiting. Receivers
// that hang never answer and their deadlines are fired only by the test, so what is checked is
// which deliveries were made while the others hung, never how long anything took.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { Database } from '../../src/db/client.js'
import { startReceiver } from '../helpers/receiver.js'
import { createEndpoint, deliveryReaches, manualTimers, recordEvent, startDispatcher, waitUntil, webhookDatabase } from '../helpers/webhooks.js'

const { db } = await webhookDatabase()
const HOUR = 3_600_000

// Each test starts with nothing due: what an earlier test left pending (a hanging endpoint's
// backlog, given back at its dispatcher's stop) would take slots here.
t.beforeEach(async () => {
  await db.execute(sql`update webhook_deliveries set status = 'failed', next_attempt_at = null, claimed_until = null, claim_token = null where status = 'pending'`)
})

/**
 * The test database, with the statements recording outcomes held until release(), and the
 * claims counted as they return.
 */
function holdingRecords() {
  const state = { held: 0, claims: 0, claimsWhileHeld: 0 }
  const waiting: (() => void)[] = []
  let holding = true
  const held = new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'execute') return Reflect.get(target, property, receiver)
      return async (query: { queryChunks?: unknown[] }) => {
        const text = JSON.stringify(query.queryChunks ?? '')
        if (holding && text.includes('last_response_status = o.status')) {
          state.held++
          await new Promise<void>((resolve) => waiting.push(resolve))
        }
        const result = await target.execute(query as never)
        if (text.includes('skip locked')) {
          state.claims++
          if (state.held > 0 && holding) state.claimsWhileHeld++
        }
        return result
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

t.test('a slot its recorded outcome frees is filled at once: the endpoint’s next delivery goes, without a poll', async (t) => {
  const receiver = await startReceiver()
  const endpoint = await createEndpoint(receiver.url)
  const first = await recordEvent(endpoint)
  const second = await recordEvent(endpoint)
  const records = holdingRecords()
  await startDispatcher(t, { db: records.db, perEndpoint: 1, pollMs: HOUR })
  await receiver.received(1)
  // The first attempt ended; while its outcome is being recorded the database still counts it
  // in flight, so the claim made as it ended found the endpoint's one slot taken.
  await waitUntil(
    async () => records.state,
    (s) => s.held === 1 && s.claimsWhileHeld >= 1,
  )
  t.equal(receiver.requests.length, 1, 'one at a time to the endpoint')
  records.release()
  await deliveryReaches(first.deliveryId, 'succeeded')
  await deliveryReaches(second.deliveryId, 'succeeded')
  t.equal(receiver.requests.length, 2, 'the second delivery went once the first was recorded')
})

t.test('a claim that passed over due deliveries is followed at once by another, which reaches those behind them', async (t) => {
  const timers = manualTimers()
  const hanging = await startReceiver('hang')
  const slow = await createEndpoint(hanging.url)
  for (let i = 0; i < 8; i++) await recordEvent(slow)
  const healthy = await startReceiver()
  const { deliveryId } = await recordEvent(await createEndpoint(healthy.url))
  // Two slots: a claim looks at the 8 deliveries due first (2 × 4), all the hanging endpoint's,
  // and may take one of them; the healthy endpoint's delivery is the ninth.
  await startDispatcher(t, { concurrency: 2, perEndpoint: 1, pollMs: HOUR, timers, drainMs: 0 })
  await deliveryReaches(deliveryId, 'succeeded')
  await hanging.received(1)
  t.equal(hanging.open(), 1, 'delivered while the hanging endpoint held its one attempt')
  t.equal(timers.pending(), 1, 'whose deadline never came')
})
