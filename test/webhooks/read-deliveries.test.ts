// GET /v1/webhook-endpoints/{endpoint_id}/deliveries and .../deliveries/{id}: newest first,
// optionally of one status, paged by offset and by cursor; next_attempt_at only while pending;
// never claimed_until; a delivery of another endpoint or project is a 404.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { walkPages } from '../helpers/pages.js'
import { createEndpoint, sendTest, setDelivery, twoTenants } from './helpers.js'

t.test('newest first, a status filter, offset and cursor pages', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  const made = []
  for (let i = 0; i < 5; i++) made.push(await sendTest(t, app, key, endpoint.id))
  const at = new Date()
  await setDelivery(made[1]!.id, { status: 'succeeded', attempts: 1, last_attempt_at: at, last_response_status: 204, next_attempt_at: null })
  await setDelivery(made[3]!.id, { status: 'failed', attempts: 8, last_attempt_at: at, last_response_status: 500, last_error: 'answered 500', next_attempt_at: null })

  const all = await call(t, app, { url: `${endpoint.url}/deliveries`, key })
  const ids: string[] = all.json.data.map((d: { id: string }) => d.id)
  t.same([...ids].sort(), made.map((d) => d.id).sort(), 'every delivery')
  const times: string[] = all.json.data.map((d: { created_at: string }) => d.created_at)
  t.same(times, [...times].sort().reverse(), 'newest first')
  t.same(all.json.pagination, { limit: 25, offset: 0, has_more: false, next_cursor: null })

  const byStatus = async (status: string) =>
    (await call(t, app, { url: `${endpoint.url}/deliveries?status=${status}`, key })).json.data.map((d: { id: string }) => d.id)
  t.same(await byStatus('succeeded'), [made[1]!.id])
  t.same(await byStatus('failed'), [made[3]!.id])
  t.same((await byStatus('pending')).sort(), [made[0]!.id, made[2]!.id, made[4]!.id].sort())
  for (const bad of ['status=done', 'status=PENDING', 'limit=0', 'cursor=nope', 'type=webhook.test']) {
    t.equal((await call(t, app, { url: `${endpoint.url}/deliveries?${bad}`, key })).status, 400, bad)
  }

  const offsetPage = await call(t, app, { url: `${endpoint.url}/deliveries?limit=2&offset=2`, key })
  t.same(offsetPage.json.data.map((d: { id: string }) => d.id), ids.slice(2, 4))
  t.same(await walkPages(t, app, key, `${endpoint.url}/deliveries`, 2), ids, 'the cursor walks every delivery once, in order')
  const pendingPage = await call(t, app, { url: `${endpoint.url}/deliveries?status=pending&limit=1`, key })
  const foreignCursor = await call(t, app, { url: `${endpoint.url}/deliveries?limit=1&cursor=${encodeURIComponent(pendingPage.json.pagination.next_cursor)}`, key })
  t.equal(foreignCursor.status, 400, 'a cursor holds its status filter')
})

t.test('the record: next_attempt_at only while pending; claimed_until never', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  const delivery = await sendTest(t, app, key, endpoint.id)
  const url = `${endpoint.url}/deliveries/${delivery.id}`
  const claimed = new Date(Date.now() + 30_000)
  // An attempt under way (the dispatcher's claim), then a failed attempt with a retry due.
  await setDelivery(delivery.id, { claimed_until: claimed })
  const during = await call(t, app, { url, key })
  t.same(during.json.data, delivery, 'a claim changes nothing shown')
  t.notOk(during.raw.includes('claimed_until'))
  const retryAt = new Date(Date.now() + 5_000)
  await setDelivery(delivery.id, { claimed_until: null, attempts: 1, last_attempt_at: new Date(), last_response_status: null, last_error: 'connection refused', next_attempt_at: retryAt })
  const failing = await call(t, app, { url, key })
  t.match(failing.json.data, { status: 'pending', attempts: 1, last_response_status: null, last_error: 'connection refused', next_attempt_at: retryAt.toISOString() })
  // A delivery that ended keeps whatever next_attempt_at it had, and shows none.
  await setDelivery(delivery.id, { status: 'failed' })
  t.equal((await call(t, app, { url, key })).json.data.next_attempt_at, null, 'failed: none')
  await setDelivery(delivery.id, { status: 'succeeded', last_response_status: 200, last_error: null })
  t.equal((await call(t, app, { url, key })).json.data.next_attempt_at, null, 'succeeded: none')
  const etag = (await call(t, app, { url, key })).headers.etag as string
  t.equal((await call(t, app, { url, key, headers: { 'if-none-match': etag } })).status, 304)
})

t.test("404: another endpoint's delivery, another project's, missing or malformed ids", async (t) => {
  const app = await testApp()
  const { a, b, first, second, delivery, ofB } = await twoTenants(t, app)
  const ofBDelivery = await sendTest(t, app, b.key, ofB.id)
  const missing: [string, string][] = [
    [`${second.url}/deliveries/${delivery.id}`, a.key],
    [`${first.url}/deliveries/${ofBDelivery.id}`, a.key],
    [`${first.url}/deliveries/wd_000000000000000000000`, a.key],
    [`${first.url}/deliveries/${delivery.event_id}`, a.key],
    [`${first.url}/deliveries/${delivery.id}`, b.key],
    [`${ofB.url}/deliveries/${delivery.id}`, b.key],
    [`${first.url}/deliveries`, b.key],
    [`/v1/webhook-endpoints/we_000000000000000000000/deliveries`, a.key],
    [`/v1/webhook-endpoints/${delivery.id}/deliveries`, a.key],
  ]
  for (const [url, key] of missing) {
    const res = await call(t, app, { url, key })
    t.same([res.status, res.json.code], [404, 'not_found'], url)
  }
  // The contract's order of checks: a query the list cannot use is a 400 before its parent's 404.
  const badCursor = await call(t, app, { url: `/v1/webhook-endpoints/we_000000000000000000000/deliveries?cursor=nope`, key: a.key })
  t.same([badCursor.status, badCursor.json.code], [400, 'validation_failed'], 'a cursor of no list, under a missing endpoint: 400 first')
  t.same((await call(t, app, { url: `${second.url}/deliveries`, key: a.key })).json.data, [], 'an endpoint without deliveries: an empty page')
  const free = await createProject({ plan: 'free' })
  t.equal((await call(t, app, { url: `${first.url}/deliveries`, key: free.key })).status, 404, "the free plan reads, but only its own")
})
