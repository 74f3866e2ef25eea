// A delivery retried while a PATCH disables its endpoint: the disabling parks the endpoint's
// pending deliveries in its transaction, and the retry must not make one of them due again
// behind its back. The retry waits for the endpoint's row and then sees it disabled: 409
// endpoint_disabled, the delivery left parked. (The single-connection PGlite cannot race them.)
import t from 'tap'
import { call } from '../helpers/app.js'
import { endpointWithDelivery, raceConnections } from './fixtures/pg.js'

t.test('a retry racing the disabling of its endpoint is refused, and leaves the delivery parked', async (t) => {
  const { app, applicationName, key, endpointId, delivery } = await endpointWithDelivery(t, 'retry-race')

  const { other, lockWaits } = raceConnections(t)
  let retried: Promise<Awaited<ReturnType<typeof call>>> | undefined
  await other.begin(async (tx) => {
    // What PATCH {"enabled": false} does, held uncommitted: the endpoint disabled, its deliveries parked.
    await tx`update webhook_endpoints set enabled = false where id = ${endpointId}`
    await tx`update webhook_deliveries set next_attempt_at = null where endpoint_id = ${endpointId} and status = 'pending'`
    retried = call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${endpointId}/deliveries/${delivery.id}/retry`, key })
    // The retry waits for a row the disabling holds; then the disabling commits.
    await lockWaits({ applicationName })
  })
  const res = await retried!
  t.same([res.status, res.json.code], [409, 'endpoint_disabled'], 'the retry sees the endpoint disabled')
  const [row] = await other`select status, next_attempt_at from webhook_deliveries where id = ${delivery.id}`
  t.same(row, { status: 'pending', next_attempt_at: null }, 'the delivery stays parked')
})
