// An endpoint deleted while a write makes its event: the delete and the write's deliveries race
// for the endpoint's row, which the single-connection PGlite cannot show. The write must succeed,
// with no delivery to the endpoint that is gone, never a 500 (a foreign key violation, before the
// deliveries lost that key).
import t from 'tap'
import { call } from '../helpers/app.js'
import { HOOK_URL } from '../webhooks/helpers.js'
import { pgApp, proProject, raceConnections } from './fixtures/pg.js'

t.test('an endpoint deleted while an event is written: the write succeeds, with no delivery to it', async (t) => {
  const { app, handle } = await pgApp(t, { label: 'endpoint-race', poolSize: 4 })
  const { key } = await proProject(handle.db, 'Endpoint race')
  const endpoint = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL } })
  t.equal(endpoint.status, 201)
  const endpointId = endpoint.json.data.id as string

  const { other, lockWaits } = raceConnections(t)
  let written: Promise<Awaited<ReturnType<typeof call>>> | undefined
  await other.begin(async (tx) => {
    // The deletion holds the endpoint's row, uncommitted, while the write reads it.
    await tx`delete from webhook_endpoints where id = ${endpointId}`
    written = call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Raced', status: 'published' } })
    // The write waits for the row (a lock wait in pg_stat_activity); then the deletion commits.
    await lockWaits({ query: 'insert into webhook_deliveries' })
  })
  const res = await written!
  t.equal(res.status, 201, 'the write succeeds')
  const [event] = await other`select id from events where data::jsonb->>'id' = ${res.json.data.id}`
  t.ok(event, 'with its event')
  const deliveries = await other`select count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId}`
  t.equal(deliveries[0]!.n, 0, 'and no delivery to the endpoint that was deleted')
})
