// GET /v1/events and GET /v1/events/{id}: the project's events of the last 30 days, newest first,
// optionally of one type, paged by offset and by cursor, whether or not an endpoint was
// subscribed; an event older than 30 days is invisible even before it is pruned.
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { Database } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { rowsOf } from '../../src/db/results.js'
import { eventJson } from '../../src/webhooks/event-record.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { walkPages } from '../helpers/pages.js'
import { age, createEndpoint, recordEvent, sendTest } from './helpers.js'

/**
 * Writes through the API that each record one event (an enrollment, a publication, another
 * enrollment, a revocation, in that order), and the records their GETs return at that moment:
 * what the events carry.
 */
async function writes(t: Test, app: FastifyInstance, key: string) {
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Events', status: 'active' } })
  const testers = `/v1/beta/programs/${program.json.data.id}/testers`
  const tester = await call(t, app, { method: 'POST', url: testers, key, body: { email: 'ada@example.com' } })
  const entry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Dark mode', status: 'published' } })
  const other = await call(t, app, { method: 'POST', url: testers, key, body: { email: 'grace@example.com' } })
  const revoked = await call(t, app, { method: 'PATCH', url: `${testers}/${other.json.data.id}`, key, body: { status: 'revoked' } })
  return [
    { type: 'beta_tester.enrolled', data: tester.json.data },
    { type: 'changelog_entry.published', data: entry.json.data },
    { type: 'beta_tester.enrolled', data: other.json.data },
    { type: 'beta_tester.revoked', data: revoked.json.data },
  ]
}

t.test('newest first, a type filter, offset and cursor pages; no endpoint needed', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const written = await writes(t, app, key)
  const all = await call(t, app, { url: '/v1/events', key })
  t.equal(all.status, 200)
  const listed: string[] = all.json.data.map((e: { id: string }) => e.id)
  // Two writes may share a millisecond, whose events then list in id order: compare as sets.
  const bySerialization = (events: unknown[]) => events.map((e) => JSON.stringify(e)).sort()
  t.same(
    bySerialization(all.json.data.map((e: { type: string; data: unknown }) => ({ type: e.type, data: e.data }))),
    bySerialization(written),
    'every event, though no endpoint is subscribed, each with the record as its GET returned it',
  )
  const times: string[] = all.json.data.map((e: { created_at: string }) => e.created_at)
  t.same(times, [...times].sort().reverse(), 'newest first')
  const idOf = (type: string, data: unknown) => all.json.data.find((e: { type: string; data: unknown }) => e.type === type && JSON.stringify(e.data) === JSON.stringify(data)).id
  const ids = written.map((w) => idOf(w.type, w.data) as string)

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
  const tester = (await writes(t, app, key))[0]!.data
  const recent = await recordEvent(projectId, 'beta_tester.joined', tester)
  const edge = await recordEvent(projectId, 'beta_tester.joined', tester)
  const old = await recordEvent(projectId, 'beta_tester.joined', tester)
  await age(edge, 29)
  await age(old, 31)
  const recorded = new Set([recent, edge, old])
  const listed = (await call(t, app, { url: '/v1/events', key })).json.data.map((e: { id: string }) => e.id).filter((id: string) => recorded.has(id))
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

t.test('while the beta feature is off, the log hides the beta area’s events (404 by id); on again, they are back', async (t) => {
  const app = await testApp()
  const project = await createProject()
  const { key } = project
  const written = await writes(t, app, key)
  const all = (await call(t, app, { url: '/v1/events', key })).json.data as { id: string; type: string }[]
  t.equal(all.length, written.length)
  const beta = all.filter((e) => e.type.startsWith('beta_'))
  const other = all.filter((e) => !e.type.startsWith('beta_'))
  t.same([beta.length, other.length], [3, 1])

  const setBeta = async (on: boolean) => {
    const res = await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${project.id}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { beta_enabled: on } })
    t.equal(res.status, 200)
  }
  await setBeta(false)
  t.equal((await call(t, app, { url: '/v1/beta/programs', key })).status, 403, 'the beta area answers 403 beta_disabled')
  t.same((await call(t, app, { url: '/v1/events', key })).json.data, other, 'the list holds the other events alone')
  t.same((await call(t, app, { url: '/v1/events?type=beta_tester.enrolled', key })).json.data, [], 'a beta type: an empty page, not a 403')
  t.same(await walkPages(t, app, key, '/v1/events', 1), other.map((e) => e.id), 'and so do the cursor pages')
  for (const event of beta) {
    const res = await call(t, app, { url: `/v1/events/${event.id}`, key })
    t.same([res.status, res.json.code], [404, 'not_found'], `${event.type} by id`)
  }
  t.equal((await call(t, app, { url: `/v1/events/${other[0]!.id}`, key })).status, 200, 'the changelog event is still shown')

  await setBeta(true)
  t.same((await call(t, app, { url: '/v1/events', key })).json.data, all, 'with the feature on again, every event')
  t.equal((await call(t, app, { url: `/v1/events/${beta[0]!.id}`, key })).status, 200)
})

t.test("an event's created_at is when it was written, not when its transaction began", async (t) => {
  // A change that waited for another's row lock had begun before that one committed: dated by its
  // transaction's start, its event was listed below the other's, and the newest event of a tester
  // said `restored` while the tester was revoked (found by a multi-instance review).
  const { id: projectId } = await createProject()
  const { db } = await testDatabase()
  const { began, eventId } = await db.transaction(async (tx) => {
    // pg_sleep: the transaction's now() is 20 ms behind by the time the event is written.
    const [row] = rowsOf<{ began: string }>(await tx.execute(sql`select now()::text as began, pg_sleep(0.02)::text as slept`))
    const event = await makeRepos(tx as unknown as Database).transaction((repos) => repos.outbox.record(projectId, 'webhook.test', { id: 'x' }))
    return { began: row!.began, eventId: event.id }
  })
  const [row] = rowsOf<{ later: boolean }>(await db.execute(sql`select created_at >= ${began}::timestamptz + interval '20 milliseconds' as later from events where id = ${eventId}`))
  t.equal(row?.later, true, 'dated at least 20 ms after its transaction began')
})
