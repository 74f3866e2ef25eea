// POST /v1/webhook-endpoints/{id}/test: a webhook.test event (its data the endpoint's record) in
// the event log, and one delivery of it, pending and due now, to that endpoint alone, whatever it
// subscribes to; 409 endpoint_disabled for a disabled endpoint; the dispatcher is woken after commit.
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { createEndpoint, deliveryRow, setEndpoint } from './helpers.js'

t.test('202: a pending delivery due now, to this endpoint alone; the event holds the endpoint', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  // Subscribed to one other type: a test is delivered whatever the list holds.
  const target = await createEndpoint(t, app, key, { events: ['beta_tester.joined'], description: 'Target' })
  const bystander = await createEndpoint(t, app, key)
  const started = Date.now()
  const res = await call(t, app, { method: 'POST', url: `${target.url}/test`, key })
  t.equal(res.status, 202)
  const delivery = res.json.data
  t.match(delivery, {
    endpoint_id: target.id,
    event_type: 'webhook.test',
    status: 'pending',
    attempts: 0,
    last_attempt_at: null,
    last_response_status: null,
    last_error: null,
  })
  t.match(delivery.id, /^wd_[0-9A-Za-z]{21}$/)
  const due = Date.parse(delivery.next_attempt_at)
  t.ok(due >= started - 1000 && due <= Date.now() + 1000, 'due now')
  t.equal(delivery.next_attempt_at, delivery.created_at)

  const event = await call(t, app, { url: `/v1/events/${delivery.event_id}`, key })
  t.equal(event.status, 200)
  t.same(event.json.data, { id: delivery.event_id, type: 'webhook.test', created_at: delivery.created_at, data: target.data }, "the event's data is the endpoint's record")
  t.notOk(event.raw.includes(target.secret), 'and no secret')

  const listed = await call(t, app, { url: `${target.url}/deliveries`, key })
  t.same(listed.json.data, [delivery], 'the delivery is listed')
  t.same((await call(t, app, { url: `${bystander.url}/deliveries`, key })).json.data, [], 'the other endpoint gets nothing')
  t.same((await call(t, app, { url: `${target.url}/deliveries/${delivery.id}`, key })).json.data, delivery)
})

t.test('409 endpoint_disabled for a disabled endpoint, whoever disabled it; nothing is written', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key, { enabled: false })
  const byTeam = await call(t, app, { method: 'POST', url: `${created.url}/test`, key })
  t.same([byTeam.status, byTeam.json.code], [409, 'endpoint_disabled'])
  t.match(byTeam.json.detail, /enable it/)
  await setEndpoint(created.id, { disabled_reason: 'gone' })
  const gone = await call(t, app, { method: 'POST', url: `${created.url}/test`, key, body: {} })
  t.same([gone.status, gone.json.code], [409, 'endpoint_disabled'])
  t.match(gone.json.detail, /gone/)
  t.same((await call(t, app, { url: '/v1/events?type=webhook.test', key })).json.data, [], 'no event')
  t.same((await call(t, app, { url: `${created.url}/deliveries`, key })).json.data, [], 'no delivery')
  await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: true } })
  t.equal((await call(t, app, { method: 'POST', url: `${created.url}/test`, key })).status, 202, 'enabled again, it is tested')
})

t.test("404 for another project's, a missing or a malformed id; the free plan: 403; a body is 400", async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  const ofA = await createEndpoint(t, app, a.key)
  for (const id of [ofA.id, 'we_000000000000000000000', 'wd_000000000000000000000']) {
    const res = await call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${id}/test`, key: b.key })
    t.same([res.status, res.json.code], [404, 'not_found'], id)
  }
  const free = await createProject({ plan: 'free' })
  t.equal((await call(t, app, { method: 'POST', url: `${ofA.url}/test`, key: free.key })).status, 403)
  t.equal((await call(t, app, { method: 'POST', url: `${ofA.url}/test`, key: a.key, body: { type: 'beta_tester.joined' } })).status, 400)
  t.same((await call(t, app, { url: '/v1/events', key: a.key })).json.data, [], 'no event was written for A')
  t.same((await call(t, app, { url: '/v1/events', key: b.key })).json.data, [], 'nor for B')
})

t.test('an Idempotency-Key replays the delivery and writes no second event', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  const first = await call(t, app, { method: 'POST', url: `${created.url}/test`, key, headers: { 'idempotency-key': 'test-1' } })
  const again = await call(t, app, { method: 'POST', url: `${created.url}/test`, key, headers: { 'idempotency-key': 'test-1' } })
  t.equal(again.status, 202)
  t.equal(again.headers['idempotency-replayed'], 'true')
  t.same(again.json, first.json)
  t.equal((await call(t, app, { url: '/v1/events', key })).json.data.length, 1, 'one event')
})

t.test('the dispatcher is woken once the transaction commits, not before, and not on a refusal', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const enabled = await createEndpoint(t, app, key)
  let woken = 0
  const repos = makeRepos((await testDatabase()).db, undefined, { deliveriesDue: () => woken++ })
  const recorded = await repos.transaction(async (tx) => {
    const result = await tx.outbox.recordFor(projectId, enabled.id, 'webhook.test', enabled.data)
    t.equal(woken, 0, 'not while the transaction is open')
    return result
  })
  t.equal(woken, 1, 'once it has committed')
  t.match(await deliveryRow(recorded.delivery), { endpoint_id: enabled.id, event_id: recorded.id, status: 'pending' })
  await t.rejects(repos.outbox.recordFor(projectId, enabled.id, 'webhook.test', enabled.data), /transaction/, 'never outside a transaction')
  const other = await createProject()
  await t.rejects(
    repos.transaction((tx) => tx.outbox.recordFor(other.id, enabled.id, 'webhook.test', enabled.data)),
    /not an endpoint/,
    "another project's endpoint is refused, and the event rolls back",
  )
  t.equal(woken, 1)
  t.same((await call(t, app, { url: '/v1/events', key: other.key })).json.data, [], 'no event was left behind')
})
