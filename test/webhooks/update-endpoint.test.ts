// PATCH /v1/webhook-endpoints/{id}: only the fields sent change; null clears the description and
// is 400 elsewhere; an empty body is a 200 no-op; enabling clears why the service disabled it;
// If-Match is checked in the write (412); never a secret.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { createEndpoint, deliveryRow, endpointRow, sendTest, setDelivery, setEndpoint } from './helpers.js'

t.test('only the fields sent change, and updated_at moves', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key, { events: ['beta_tester.joined'], description: 'CRM' })
  const steps: [Record<string, unknown>, Record<string, unknown>][] = [
    [{ url: 'https://crm.example.com/in' }, { url: 'https://crm.example.com/in' }],
    [{ events: ['changelog_entry.published', 'changelog_entry.published', 'beta_feedback.created'] }, { events: ['changelog_entry.published', 'beta_feedback.created'] }],
    [{ events: ['beta_feedback.created', '*'] }, { events: ['*'] }],
    [{ description: 'Renamed' }, { description: 'Renamed' }],
    [{ description: null }, { description: null }],
    [{ enabled: false }, { enabled: false, disabled_reason: null }],
    [{ enabled: true, description: 'Both' }, { enabled: true, description: 'Both' }],
  ]
  let previous = created.data
  for (const [body, changed] of steps) {
    const res = await call(t, app, { method: 'PATCH', url: created.url, key, body })
    t.equal(res.status, 200, JSON.stringify(body))
    t.same(res.json.data, { ...previous, ...changed, updated_at: res.json.data.updated_at }, 'the fields sent, and nothing else')
    t.ok(res.json.data.updated_at > (previous.updated_at as string), 'updated_at moves')
    t.equal(res.json.data.created_at, created.data.created_at)
    t.notOk(res.raw.includes(created.secret), 'no secret in the answer')
    t.same((await call(t, app, { url: created.url, key })).json, res.json, 'and reads back so')
    previous = res.json.data
  }
  t.equal((await endpointRow(created.id))!.secret, created.secret, 'the secret is untouched')
})

t.test('null is 400 for url, events and enabled; an empty body is a 200 no-op', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key, { description: 'Kept' })
  for (const field of ['url', 'events', 'enabled']) {
    const res = await call(t, app, { method: 'PATCH', url: created.url, key, body: { [field]: null } })
    t.same([res.status, res.json.code], [400, 'validation_failed'], `${field}: null`)
    t.equal(res.json.errors[0].path, `/${field}`)
  }
  for (const body of [{ secret: 'whsec_x' }, { disabled_reason: null }, { id: created.id }, { events: [] }, { events: ['nope'] }, { description: 'x'.repeat(501) }]) {
    t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body })).status, 400, JSON.stringify(body))
  }
  const before = await call(t, app, { url: created.url, key })
  const empty = await call(t, app, { method: 'PATCH', url: created.url, key, body: {} })
  t.equal(empty.status, 200)
  t.same(empty.json, before.json, 'nothing changed, updated_at included')
  t.equal(empty.headers.etag, before.headers.etag, 'and the ETag is the same')
})

t.test('enabling clears disabled_reason and the failing record; disabling leaves the reason as it is', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  // What the dispatcher writes when the endpoint keeps failing (api-contract §10).
  await setEndpoint(created.id, { enabled: false, disabled_reason: 'failing', failing_since: new Date(Date.now() - 6 * 86_400_000) })
  const still = await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: false } })
  t.same([still.json.data.enabled, still.json.data.disabled_reason], [false, 'failing'], 'disabling again keeps why the service disabled it')
  const enabled = await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: true } })
  t.same([enabled.json.data.enabled, enabled.json.data.disabled_reason], [true, null])
  const row = await endpointRow(created.id)
  t.equal(row!.failing_since, null, 'the record of failing attempts is cleared')
  const disabled = await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: false } })
  t.same([disabled.json.data.enabled, disabled.json.data.disabled_reason], [false, null], 'disabled by the team: no reason')
  // A change that does not enable a disabled endpoint keeps the dispatcher's bookkeeping.
  await setEndpoint(created.id, { enabled: true, disabled_reason: null, failing_since: new Date() })
  await call(t, app, { method: 'PATCH', url: created.url, key, body: { description: 'Only this' } })
  t.not((await endpointRow(created.id))!.failing_since, null, 'failing_since stays unless the endpoint is enabled')
  await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: true } })
  t.not((await endpointRow(created.id))!.failing_since, null, 'enabling an enabled endpoint does not restart the five days')
})

t.test('disabling parks the pending deliveries (pending, next_attempt_at null); enabling makes them due at once and wakes the dispatcher after the commit', async (t) => {
  let woken = 0
  const app = await testApp({}, { deliveriesDue: () => woken++ })
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  const waiting = [await sendTest(t, app, key, created.id), await sendTest(t, app, key, created.id)]
  const done = await sendTest(t, app, key, created.id)
  await setDelivery(done.id, { status: 'succeeded', attempts: 1, next_attempt_at: null })
  // Due in an hour after a failed attempt: it waits too, and is due at once when enabled again.
  await setDelivery(waiting[1]!.id, { attempts: 1, last_error: 'answered 503', next_attempt_at: new Date(Date.now() + 3_600_000) })
  const deliveries = async () => (await call(t, app, { url: `${created.url}/deliveries`, key })).json.data as { id: string; status: string; next_attempt_at: string | null }[]
  const of = async (id: string) => (await deliveries()).find((d) => d.id === id)!

  woken = 0
  t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: false } })).status, 200)
  for (const delivery of waiting) {
    t.match(await of(delivery.id), { status: 'pending', next_attempt_at: null }, 'pending, and not due while the endpoint is disabled')
    t.equal((await deliveryRow(delivery.id))!.next_attempt_at, null, 'out of the due index')
  }
  t.match(await of(done.id), { status: 'succeeded', next_attempt_at: null }, 'a delivery made is untouched')
  t.equal(woken, 0, 'nothing due: nobody woken')

  const before = Date.now()
  t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: true } })).status, 200)
  for (const delivery of waiting) {
    const due = Date.parse((await of(delivery.id)).next_attempt_at!)
    t.ok(due >= before - 1000 && due <= Date.now() + 1000, 'due now')
  }
  t.equal((await deliveryRow(done.id))!.status, 'succeeded')
  t.equal(woken, 1, 'the dispatcher woken once')
  await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: true } })
  t.equal(woken, 1, 'enabling an enabled endpoint makes nothing due')
})

t.test('If-Match: the current ETag writes, a stale one is 412 and writes nothing', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  const read = await call(t, app, { url: created.url, key })
  const etag = read.headers.etag as string
  const first = await call(t, app, { method: 'PATCH', url: created.url, key, body: { description: 'First' }, headers: { 'if-match': etag } })
  t.equal(first.status, 200)
  t.not(first.headers.etag, etag, 'a new ETag')
  const stale = await call(t, app, { method: 'PATCH', url: created.url, key, body: { description: 'Second' }, headers: { 'if-match': etag } })
  t.same([stale.status, stale.json.code], [412, 'precondition_failed'])
  t.equal((await call(t, app, { url: created.url, key })).json.data.description, 'First')
  t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body: {}, headers: { 'if-match': etag } })).status, 412, 'an empty body checks the tag too')
  t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body: {}, headers: { 'if-match': first.headers.etag as string } })).status, 200)
  t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: false }, headers: { 'if-match': '*' } })).status, 200, 'If-Match: * asks only that it exists')
  t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body: { enabled: true }, headers: { 'if-match': `W/${first.headers.etag}` } })).status, 412, 'a weak tag never matches')
  // The tag is the representation's: a rotation changes no field shown, so it keeps the tag.
  const current = await call(t, app, { url: created.url, key })
  await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key })
  t.equal((await call(t, app, { method: 'PATCH', url: created.url, key, body: { description: 'After rotation' }, headers: { 'if-match': current.headers.etag as string } })).status, 200)
})

t.test("404 for another project's, a missing or a malformed id; 400 comes first; the free plan is 403", async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  const ofA = await createEndpoint(t, app, a.key)
  for (const id of [ofA.id, 'we_000000000000000000000', 'nope']) {
    const res = await call(t, app, { method: 'PATCH', url: `/v1/webhook-endpoints/${id}`, key: b.key, body: { description: 'Hijacked' } })
    t.same([res.status, res.json.code], [404, 'not_found'], id)
    t.equal((await call(t, app, { method: 'PATCH', url: `/v1/webhook-endpoints/${id}`, key: b.key, body: { url: 'http://localhost/' } })).status, 400, 'the body is judged before the id')
  }
  t.equal((await call(t, app, { url: ofA.url, key: a.key })).json.data.description, null, "A's endpoint is unchanged")
  const free = await createProject({ plan: 'free' })
  const refused = await call(t, app, { method: 'PATCH', url: ofA.url, key: free.key, body: { enabled: false } })
  t.same([refused.status, refused.json.code], [403, 'plan_required'])
})
