// GET /v1/events and GET /v1/events/{id}: the project's events of the last 30 days, newest first,
// optionally of one type, paged by offset and by cursor, whether or not an endpoint was
// subscribed; an event older than 30 days is invisible even before it is pruned.
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { eventJson } from '../../src/webhooks/event-record.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { walkPages } from '../helpers/pages.js'
import { age, createEndpoint, recordEvent, sendTest } from './helpers.js'

/** A tester's and a changelog entry's records, as their GETs return them: what their events carry. */
async function records(t: Test, app: FastifyInstance, key: string) {
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Events', status: 'active' } })
  const tester = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: 'ada@example.com' } })
  const entry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Dark mode', status: 'published' } })
  return { tester: tester.json.data, entry: entry.json.data }
}

t.test('newest first, a type filter, offset and cursor pages; no endpoint needed', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const { tester, entry } = await records(t, app, key)
  const ids = [
    await recordEvent(projectId, 'beta_tester.enrolled', tester),
    await recordEvent(projectId, 'changelog_entry.published', entry),
    await recordEvent(projectId, 'beta_tester.enrolled', tester),
    await recordEvent(projectId, 'beta_tester.revoked', tester),
  ]
  const all = await call(t, app, { url: '/v1/events', key })
  t.equal(all.status, 200)
  const listed: string[] = all.json.data.map((e: { id: string }) => e.id)
  t.same([...listed].sort(), [...ids].sort(), 'every event, though no endpoint is subscribed')
  const times: string[] = all.json.data.map((e: { created_at: string }) => e.created_at)
  t.same(times, [...times].sort().reverse(), 'newest first')
  const enrolled = all.json.data.find((e: { id: string }) => e.id === ids[0])
  t.same(enrolled, { id: ids[0], type: 'beta_tester.enrolled', created_at: enrolled.created_at, data: tester }, 'the record as its GET returned it')

  const ofType = await call(t, app, { url: '/v1/events?type=beta_tester.enrolled', key })
  t.same(ofType.json.data.map((e: { id: string }) => e.id).sort(), [ids[0], ids[2]].sort())
  t.same((await call(t, app, { url: '/v1/events?type=changelog_entry.published', key })).json.data.map((e: { id: string }) => e.id), [ids[1]])
  t.same((await call(t, app, { url: '/v1/events?type=beta_feedback.created', key })).json.data, [])
  for (const bad of ['type=beta_tester.exploded', 'type=*', 'type=BETA_TESTER.ENROLLED', 'status=pending', 'limit=101', 'cursor=x']) {
    const res = await call(t, app, { url: `/v1/events?${bad}`, key })
    t.same([res.status, res.json.code], [400, 'validation_failed'], bad)
  }

  t.same((await call(t, app, { url: '/v1/events?limit=2&offset=1', key })).json.data.map((e: { id: string }) => e.id), listed.slice(1, 3))
  t.same(await walkPages(t, app, key, '/v1/events', 3), listed, 'the cursor walks every event once, in order')
  const typed = await call(t, app, { url: '/v1/events?type=beta_tester.enrolled&limit=1', key })
  t.equal((await call(t, app, { url: `/v1/events?limit=1&cursor=${encodeURIComponent(typed.json.pagination.next_cursor)}`, key })).status, 400, 'a cursor holds its type')
})

t.test('get: the event exactly as it is delivered; 304 while unchanged', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  const delivery = await sendTest(t, app, key, endpoint.id)
  const res = await call(t, app, { url: `/v1/events/${delivery.event_id}`, key })
  t.equal(res.status, 200)
  const event = res.json.data
  const delivered = eventJson({ id: event.id, type: event.type, created_at: new Date(event.created_at), data: JSON.stringify(endpoint.data) })
  t.same(res.json, { data: JSON.parse(delivered) }, 'the body a delivery carries, under data')
  const etag = res.headers.etag as string
  t.equal((await call(t, app, { url: `/v1/events/${delivery.event_id}`, key, headers: { 'if-none-match': etag } })).status, 304)
})

t.test('the 30-day window is in the query: an older event is invisible before it is pruned', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const { tester } = await records(t, app, key)
  const recent = await recordEvent(projectId, 'beta_tester.joined', tester)
  const edge = await recordEvent(projectId, 'beta_tester.joined', tester)
  const old = await recordEvent(projectId, 'beta_tester.joined', tester)
  await age(edge, 29)
  await age(old, 31)
  const listed = (await call(t, app, { url: '/v1/events', key })).json.data.map((e: { id: string }) => e.id)
  t.same(listed, [recent, edge], '29 days old is listed, 31 is not')
  t.same((await call(t, app, { url: '/v1/events?type=beta_tester.joined', key })).json.data.map((e: { id: string }) => e.id), [recent, edge])
  t.equal((await call(t, app, { url: `/v1/events/${edge}`, key })).status, 200)
  const gone = await call(t, app, { url: `/v1/events/${old}`, key })
  t.same([gone.status, gone.json.code], [404, 'not_found'], 'an event older than 30 days is a 404')
})

t.test("another project's event, a missing or a malformed id: 404; the free plan reads", async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject({ plan: 'free' })
  const endpoint = await createEndpoint(t, app, a.key)
  const { event_id } = await sendTest(t, app, a.key, endpoint.id)
  for (const id of [event_id, 'evt_000000000000000000000', 'we_000000000000000000000', 'evt_']) {
    const res = await call(t, app, { url: `/v1/events/${id}`, key: b.key })
    t.same([res.status, res.json.code], [404, 'not_found'], id)
  }
  const listed = await call(t, app, { url: '/v1/events', key: b.key })
  t.same([listed.status, listed.json.data], [200, []], "B's log holds nothing of A's")
  await recordEvent(b.id, 'webhook.test', endpoint.data)
  t.equal((await call(t, app, { url: '/v1/events', key: b.key })).json.data.length, 1, 'the free plan reads its own events')
})
