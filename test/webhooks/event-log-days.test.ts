// The event log's one number of days (EVENT_LOG_DAYS): what GET /v1/events shows and what
// pruning keeps are the same window, and openapi.yaml and the README say that number.
import { readFileSync } from 'node:fs'
import { inArray, sql } from 'drizzle-orm'
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { events } from '../../src/db/schema.js'
import { eventPruning } from '../../src/jobs/event-pruning.js'
import { EVENT_LOG_DAYS } from '../../src/webhooks/event-record.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { logSink } from '../helpers/events.js'
import { source } from '../helpers/spec-check.js'
import { age, createEndpoint, recordEvent } from './helpers.js'

t.test('an event an hour short of EVENT_LOG_DAYS is shown and kept; an hour past it, neither', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const { db } = await testDatabase()
  const { data } = await createEndpoint(t, app, key)
  const inside = await recordEvent(projectId, 'webhook.test', data)
  const outside = await recordEvent(projectId, 'webhook.test', data)
  const aged = (hours: number) => sql`now() - make_interval(days => ${EVENT_LOG_DAYS}, hours => ${hours})`
  await db.update(events).set({ created_at: aged(-1) }).where(inArray(events.id, [inside]))
  await db.update(events).set({ created_at: aged(1) }).where(inArray(events.id, [outside]))

  const listed = (await call(t, app, { url: '/v1/events', key })).json.data.map((e: { id: string }) => e.id)
  t.same(listed, [inside], 'GET /v1/events shows the one inside')
  t.equal((await call(t, app, { url: `/v1/events/${outside}`, key })).status, 404)

  await eventPruning({ repos: makeRepos(db), log: logSink().log }).runOnce()
  const kept = (await db.select({ id: events.id }).from(events).where(inArray(events.id, [inside, outside]))).map((row) => row.id)
  t.same(kept, [inside], 'pruning deleted the one outside, and only it')
})

t.test("a delivery of an event past EVENT_LOG_DAYS is gone with it: not listed, not read, not retried", async (t) => {
  // It was listed and fetched, and its retry sent the event again, until pruning deleted it
  // (found by a review of the webhooks).
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  const gone = await recordEvent(projectId, 'webhook.test', endpoint.data)
  const shown = await recordEvent(projectId, 'webhook.test', endpoint.data)
  const deliveries = async () => (await call(t, app, { url: `${endpoint.url}/deliveries`, key })).json.data as { id: string; event_id: string }[]
  const goneDelivery = (await deliveries()).find((delivery) => delivery.event_id === gone)!.id
  await age(gone, EVENT_LOG_DAYS + 1)

  t.same((await deliveries()).map((delivery) => delivery.event_id), [shown], 'listed: the delivery of the event still in the log')
  t.equal((await call(t, app, { url: `${endpoint.url}/deliveries/${goneDelivery}`, key })).status, 404)
  t.equal((await call(t, app, { method: 'POST', url: `${endpoint.url}/deliveries/${goneDelivery}/retry`, key })).status, 404, 'no retry sends it again')
})

t.test('openapi.yaml and the README give the event log EVENT_LOG_DAYS days', async (t) => {
  const days = (text: string) => [...text.matchAll(/(\d+) days/g)].map((m) => Number(m[1]))
  const operation = (path: string) => source.paths[path].get as { description: string }
  for (const [what, text] of [
    ['listEvents', operation('/v1/events').description],
    ['getEvent', operation('/v1/events/{id}').description],
  ] as const) {
    t.ok(days(text).length > 0, `${what} says how many days`)
    t.same(new Set(days(text)), new Set([EVENT_LOG_DAYS]), `${what}: ${EVENT_LOG_DAYS} days`)
  }
  const tag = (source.tags as { name: string; description: string }[]).find((tag) => tag.name === 'webhooks')!.description
  t.match(tag, new RegExp(`kept ${EVENT_LOG_DAYS} days in the event log`), 'the webhooks tag')
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  t.match(readme, new RegExp(`\\*\\*Kept ${EVENT_LOG_DAYS} days\\.\\*\\* .*\\n.*of the last ${EVENT_LOG_DAYS} days`), 'the README')
})
