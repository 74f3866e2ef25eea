// DELETE /v1/webhook-endpoints/{id}: 204; its deliveries go with it, pending ones included: none
// is shown or sent from the DELETE on, and event pruning removes their rows; the events stay in
// the log; If-Match is checked in the DELETE (412).
import t from 'tap'
import { dispatchRepo } from '../../src/db/repos/dispatch.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { eventPruning } from '../../src/jobs/event-pruning.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { logSink } from '../helpers/events.js'
import { createEndpoint, deliveryRow, sendTest, setDelivery } from './helpers.js'

t.test('204; its deliveries are gone, its events stay', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const doomed = await createEndpoint(t, app, key)
  const kept = await createEndpoint(t, app, key)
  const pending = await sendTest(t, app, key, doomed.id)
  const done = await sendTest(t, app, key, doomed.id)
  await setDelivery(done.id, { status: 'succeeded', attempts: 1, last_attempt_at: new Date(), last_response_status: 200, next_attempt_at: null })
  const other = await sendTest(t, app, key, kept.id)

  const res = await call(t, app, { method: 'DELETE', url: doomed.url, key })
  t.equal(res.status, 204)
  t.equal(res.raw, '')
  t.equal((await call(t, app, { url: doomed.url, key })).status, 404)
  t.equal((await call(t, app, { url: `${doomed.url}/deliveries`, key })).status, 404)
  for (const delivery of [pending, done]) {
    const url = `${doomed.url}/deliveries/${delivery.id}`
    t.equal((await call(t, app, { url, key })).status, 404, 'a delivery of the deleted endpoint is not shown')
    t.equal((await call(t, app, { method: 'POST', url: `${url}/retry`, key })).status, 404, 'nor retried')
  }
  const { db } = await testDatabase()
  const claimed = await dispatchRepo(db).claim({ limit: 100, perEndpoint: 100, perFailingEndpoint: 100, perProject: 100, leaseMs: 60_000, attemptMs: 60_000 })
  t.notOk(claimed.deliveries.some((d) => d.endpointId === doomed.id), 'nor sent')
  t.ok(await deliveryRow(pending.id), 'the DELETE left the rows to pruning (it is one row’s work, whatever the history)')

  await eventPruning({ repos: makeRepos(db), log: logSink().log }).runOnce()
  t.equal(await deliveryRow(pending.id), undefined, 'pruning removes the pending delivery')
  t.equal(await deliveryRow(done.id), undefined, 'and the one made')
  t.ok(await deliveryRow(other.id), "another endpoint's delivery stays")
  for (const delivery of [pending, done]) {
    t.equal((await call(t, app, { url: `/v1/events/${delivery.event_id}`, key })).status, 200, 'the event stays in the log')
  }
  t.equal((await call(t, app, { method: 'DELETE', url: doomed.url, key })).status, 404, 'a second delete is a 404')
})

t.test('If-Match: a stale tag is 412 and deletes nothing; the current one deletes', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  const etag = (await call(t, app, { url: created.url, key })).headers.etag as string
  await call(t, app, { method: 'PATCH', url: created.url, key, body: { description: 'Changed' } })
  const stale = await call(t, app, { method: 'DELETE', url: created.url, key, headers: { 'if-match': etag } })
  t.same([stale.status, stale.json.code], [412, 'precondition_failed'])
  t.equal((await call(t, app, { url: created.url, key })).status, 200, 'still there')
  const current = (await call(t, app, { url: created.url, key })).headers.etag as string
  t.equal((await call(t, app, { method: 'DELETE', url: created.url, key, headers: { 'if-match': current } })).status, 204)
  t.equal((await call(t, app, { method: 'DELETE', url: created.url, key, headers: { 'if-match': current } })).status, 404, 'a missing endpoint is 404, not 412')
})

t.test("another project's, a missing or a malformed id: 404; the free plan: 403", async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  const ofA = await createEndpoint(t, app, a.key)
  for (const id of [ofA.id, 'we_000000000000000000000', 'evt_000000000000000000000', 'x']) {
    const res = await call(t, app, { method: 'DELETE', url: `/v1/webhook-endpoints/${id}`, key: b.key })
    t.same([res.status, res.json.code], [404, 'not_found'], id)
  }
  const free = await createProject({ plan: 'free' })
  t.equal((await call(t, app, { method: 'DELETE', url: ofA.url, key: free.key })).status, 403)
  t.equal((await call(t, app, { url: ofA.url, key: a.key })).status, 200, "A's endpoint is still there")
})
