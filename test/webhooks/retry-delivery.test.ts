// POST /v1/webhook-endpoints/{endpoint_id}/deliveries/{id}/retry: any delivery becomes pending
// and due now, its attempts kept; 409 endpoint_disabled while its endpoint is disabled; 404 unless
// the delivery is that endpoint's, in the project; the dispatcher is woken after commit.
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { createEndpoint, deliveryRow, sendTest, setDelivery, setEndpoint, twoTenants } from './helpers.js'

t.test('202 whatever the status: pending and due now, attempts and the last attempt kept', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  const lastAttempt = new Date(Date.now() - 3_600_000)
  const states = [
    { status: 'failed' as const, attempts: 8, last_attempt_at: lastAttempt, last_response_status: 503, last_error: 'answered 503', next_attempt_at: null },
    { status: 'succeeded' as const, attempts: 2, last_attempt_at: lastAttempt, last_response_status: 200, last_error: null, next_attempt_at: null },
    { status: 'pending' as const, attempts: 3, last_attempt_at: lastAttempt, last_response_status: null, last_error: 'timed out after 10 s', next_attempt_at: new Date(Date.now() + 7_200_000) },
  ]
  for (const state of states) {
    const delivery = await sendTest(t, app, key, endpoint.id)
    await setDelivery(delivery.id, state)
    const started = Date.now()
    const res = await call(t, app, { method: 'POST', url: `${endpoint.url}/deliveries/${delivery.id}/retry`, key })
    t.equal(res.status, 202, state.status)
    t.match(res.json.data, {
      id: delivery.id,
      event_id: delivery.event_id,
      status: 'pending',
      attempts: state.attempts,
      last_attempt_at: lastAttempt.toISOString(),
      last_response_status: state.last_response_status,
      last_error: state.last_error,
    })
    const due = Date.parse(res.json.data.next_attempt_at)
    t.ok(due >= started - 1000 && due <= Date.now() + 1000, 'due now')
    t.same((await call(t, app, { url: `${endpoint.url}/deliveries/${delivery.id}`, key })).json.data, res.json.data, 'and reads back so')
  }
})

t.test('409 endpoint_disabled while the endpoint is disabled; nothing changes', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  const delivery = await sendTest(t, app, key, endpoint.id)
  await setDelivery(delivery.id, { status: 'failed', attempts: 8, next_attempt_at: null })
  await setEndpoint(endpoint.id, { enabled: false, disabled_reason: 'gone' })
  const res = await call(t, app, { method: 'POST', url: `${endpoint.url}/deliveries/${delivery.id}/retry`, key })
  t.same([res.status, res.json.code], [409, 'endpoint_disabled'])
  t.match(res.json.detail, /gone/)
  t.equal((await deliveryRow(delivery.id))!.status, 'failed', 'still failed')
  // An unknown delivery of a disabled endpoint is still a 404.
  t.equal((await call(t, app, { method: 'POST', url: `${endpoint.url}/deliveries/wd_000000000000000000000/retry`, key })).status, 404)
  await call(t, app, { method: 'PATCH', url: endpoint.url, key, body: { enabled: true } })
  t.equal((await call(t, app, { method: 'POST', url: `${endpoint.url}/deliveries/${delivery.id}/retry`, key })).status, 202, 'enabled again, it retries')
})

t.test("404 unless the delivery is that endpoint's in the project; the free plan: 403; a body is 400", async (t) => {
  const app = await testApp()
  const { a, b, first, second, delivery, ofB } = await twoTenants(t, app)
  await setDelivery(delivery.id, { status: 'failed', next_attempt_at: null })
  const cases: [string, string][] = [
    [`${second.url}/deliveries/${delivery.id}/retry`, a.key],
    [`${first.url}/deliveries/${delivery.id}/retry`, b.key],
    [`${ofB.url}/deliveries/${delivery.id}/retry`, b.key],
    [`${first.url}/deliveries/wd_000000000000000000000/retry`, a.key],
    [`${first.url}/deliveries/nope/retry`, a.key],
    [`/v1/webhook-endpoints/nope/deliveries/${delivery.id}/retry`, a.key],
  ]
  for (const [url, key] of cases) {
    const res = await call(t, app, { method: 'POST', url, key })
    t.same([res.status, res.json.code], [404, 'not_found'], url)
  }
  t.equal((await deliveryRow(delivery.id))!.status, 'failed', 'untouched')
  const free = await createProject({ plan: 'free' })
  t.equal((await call(t, app, { method: 'POST', url: `${first.url}/deliveries/${delivery.id}/retry`, key: free.key })).status, 403)
  t.equal((await call(t, app, { method: 'POST', url: `${first.url}/deliveries/${delivery.id}/retry`, key: a.key, body: { at: 'now' } })).status, 400)
})

t.test('the dispatcher is woken once the retry commits; never outside a transaction', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  const delivery = await sendTest(t, app, key, endpoint.id)
  await setDelivery(delivery.id, { status: 'failed', next_attempt_at: null })
  let woken = 0
  const repos = makeRepos((await testDatabase()).db, undefined, { deliveriesDue: () => woken++ })
  await repos.transaction(async (tx) => {
    t.equal((await tx.webhooks.retry(projectId, endpoint.id, delivery.id)).outcome, 'retried')
    t.equal(woken, 0, 'not before the commit')
  })
  t.equal(woken, 1, 'once after it')
  await setEndpoint(endpoint.id, { enabled: false })
  t.equal((await repos.transaction((tx) => tx.webhooks.retry(projectId, endpoint.id, delivery.id))).outcome, 'endpoint_disabled')
  t.equal(woken, 1, 'a refused retry wakes nobody')
  await t.rejects(repos.webhooks.retry(projectId, endpoint.id, delivery.id), /transaction/)
})
