// Shared setup of the webhook tests: endpoints made through the API, and what only the server
// writes (an event of another type, a delivery the dispatcher has attempted, an endpoint it has
// disabled, an old event) written straight into the database, as the server would write it.
import { eq, sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { rowsOf } from '../../src/db/results.js'
import { events, webhook_deliveries, webhook_endpoints } from '../../src/db/schema.js'
import type { EventType } from '../../src/webhooks/event-types.js'
import { call, createProject, type CallResult } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

/** A public URL the endpoint tests subscribe; nothing is sent to it (no dispatcher runs in them). */
export const HOOK_URL = 'https://hooks.example.com/feedback'

export const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/

export interface CreatedEndpoint {
  id: string
  url: string
  secret: string
  data: Record<string, unknown>
  res: CallResult
}

export async function createEndpoint(t: Test, app: FastifyInstance, key: string, body: Record<string, unknown> = {}): Promise<CreatedEndpoint> {
  const res = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL, ...body } })
  if (res.status !== 201) throw new Error(`creating an endpoint answered ${res.status}: ${res.raw}`)
  return { id: res.json.data.id, url: `/v1/webhook-endpoints/${res.json.data.id}`, secret: res.json.secret, data: res.json.data, res }
}

/** Two projects: A with two endpoints and a delivery to the first, B with an endpoint of its own. */
export async function twoTenants(t: Test, app: FastifyInstance) {
  const a = await createProject()
  const b = await createProject()
  const first = await createEndpoint(t, app, a.key)
  const second = await createEndpoint(t, app, a.key)
  const delivery = await sendTest(t, app, a.key, first.id)
  const ofB = await createEndpoint(t, app, b.key)
  return { a, b, first, second, delivery, ofB }
}

/** POST .../test: a webhook.test delivery to the endpoint; its record. */
export async function sendTest(t: Test, app: FastifyInstance, key: string, endpointId: string): Promise<Record<string, unknown> & { id: string; event_id: string }> {
  const res = await call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${endpointId}/test`, key })
  if (res.status !== 202) throw new Error(`testing an endpoint answered ${res.status}: ${res.raw}`)
  return res.json.data
}

/** The endpoint's row, secrets included. */
export async function endpointRow(id: string) {
  const { db } = await testDatabase()
  const [row] = await db.select().from(webhook_endpoints).where(eq(webhook_endpoints.id, id))
  return row
}

/** Writes what the dispatcher writes on an endpoint (disabling it, its failing_since). */
export async function setEndpoint(id: string, values: Partial<typeof webhook_endpoints.$inferInsert>): Promise<void> {
  const { db } = await testDatabase()
  await db.update(webhook_endpoints).set(values).where(eq(webhook_endpoints.id, id))
}

export async function deliveryRow(id: string) {
  const { db } = await testDatabase()
  const [row] = await db.select().from(webhook_deliveries).where(eq(webhook_deliveries.id, id))
  return row
}

/** Writes what the dispatcher writes on a delivery after an attempt. */
export async function setDelivery(id: string, values: Partial<typeof webhook_deliveries.$inferInsert>): Promise<void> {
  const { db } = await testDatabase()
  await db.update(webhook_deliveries).set(values).where(eq(webhook_deliveries.id, id))
}

/**
 * An event as the change that causes it writes it (outbox.record, in a transaction), with a
 * delivery to each enabled endpoint subscribed to it; `data` is a record as its GET returns it.
 */
export async function recordEvent(projectId: string, type: EventType, data: unknown): Promise<string> {
  const repos = makeRepos((await testDatabase()).db)
  return (await repos.transaction((tx) => tx.outbox.record(projectId, type, data))).id
}

/** Moves an event (and its deliveries) `days` into the past, as if it had been written then. */
export async function age(eventId: string, days: number): Promise<void> {
  const { db } = await testDatabase()
  const then = sql`now() - make_interval(days => ${days})`
  await db.update(events).set({ created_at: then }).where(eq(events.id, eventId))
  await db.update(webhook_deliveries).set({ created_at: then }).where(eq(webhook_deliveries.event_id, eventId))
}

/** The answers the project's Idempotency-Keys hold, as stored (null while a request runs). */
export async function storedAnswers(projectId: string): Promise<{ key: string; response_body: string | null }[]> {
  const { db } = await testDatabase()
  return rowsOf(await db.execute(sql`select key, response_body from idempotency_keys where scope = ${projectId}`))
}
