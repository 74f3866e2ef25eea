// Disabling an endpoint (PATCH {"enabled": false}) parks its pending deliveries in its
// transaction, and an attempt's record (dispatch.ts, record) locks its delivery, then the
// delivery's endpoint: the opposite order. When an attempt outlived its 60 s lease and its record
// arrives while a PATCH disables its endpoint, the PATCH waited for the delivery the record held,
// and the record for the endpoint the PATCH held: a deadlock, which PostgreSQL broke by failing
// the PATCH (40P01, a 500). The park now leaves a delivery that another transaction holds to that
// transaction's record, whose dispatcher parks the deliveries it left pending once it has
// committed, waiting for a PATCH still under way to see its endpoint disabled. (The
// single-connection PGlite cannot race them.)
import t from 'tap'
import { dispatchRepo } from '../../src/db/repos/dispatch.js'
import { call } from '../helpers/app.js'
import { endpointWithDelivery, raceConnections } from './fixtures/pg.js'

t.test("disabling an endpoint while a late attempt's record holds one of its deliveries: 200, and no deadlock", async (t) => {
  const { app, applicationName, key, endpointId, delivery } = await endpointWithDelivery(t, 'park-race')
  const { other, lockWaits } = raceConnections(t)
  // An attempt claimed more than 60 s ago whose lease has run out: the park may take its delivery.
  await other`update webhook_deliveries set claim_token = 'late-attempt', claimed_until = now() - interval '1 second' where id = ${delivery.id}`

  let answered = false
  let patched: Promise<Awaited<ReturnType<typeof call>>> | undefined
  await other.begin(async (tx) => {
    // What the late attempt's record does, held open between its two steps: the delivery first...
    await tx`update webhook_deliveries set attempts = attempts + 1, claimed_until = null, claim_token = null where id = ${delivery.id} and claim_token = 'late-attempt'`
    patched = call(t, app, { method: 'PATCH', url: `/v1/webhook-endpoints/${endpointId}`, key, body: { enabled: false } }).finally(() => (answered = true))
    await lockWaits({ applicationName }, 1, () => answered)
    // ...then its endpoint.
    await tx`select id from webhook_endpoints where id = ${endpointId} for no key update`
  })
  const res = await patched!
  t.same([res.status, res.json.data?.enabled], [200, false], 'the endpoint is disabled')
  const [row] = await other`select attempts, claim_token from webhook_deliveries where id = ${delivery.id}`
  t.same(row, { attempts: 1, claim_token: null }, 'and the record committed')
})

t.test("after a record, the park waits for a PATCH disabling the endpoint at that moment, and parks what the PATCH's park passed over", async (t) => {
  // The delivery as the late attempt's record left it: pending, due again later.
  const { handle, applicationName, endpointId, delivery } = await endpointWithDelivery(t, 'park-after-record')
  const { other, lockWaits } = raceConnections(t)
  await other`update webhook_deliveries set attempts = 1, next_attempt_at = now() + interval '5 seconds' where id = ${delivery.id}`

  let parked: Promise<number> | undefined
  let done = false
  await other.begin(async (tx) => {
    // The PATCH, not yet committed; its own park passed over the delivery the record held.
    await tx`update webhook_endpoints set enabled = false, updated_at = now() where id = ${endpointId}`
    parked = dispatchRepo(handle.db)
      .park([endpointId])
      .finally(() => (done = true))
    await lockWaits({ applicationName }, 1, () => done)
  })
  t.equal(await parked!, 1, 'the delivery is parked')
  const [row] = await other`select status, next_attempt_at from webhook_deliveries where id = ${delivery.id}`
  t.same(row, { status: 'pending', next_attempt_at: null }, 'pending, next_attempt_at null, as the contract says of a disabled endpoint')
})
