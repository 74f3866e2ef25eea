// Setup for the webhook delivery tests: endpoints and events written straight to the database
// (as the API's operations would write them), a dispatcher beside them, and waits for a
// delivery's state. Waits look at the state every few milliseconds until it is reached; how
// long that takes is bounded by the test's timeout, never asserted.
//
// A dispatcher claims every due delivery of its database, whoever wrote it: so a file that runs
// one works in a database of its own (webhookDatabase), so that no dispatcher of its attempts
// another file's deliveries, and no other file's dispatcher its.
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { ClientRequest } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { eq, sql } from 'drizzle-orm'
import { defaults } from '../../src/config.js'
import type { Database, DbHandle } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { webhook_deliveries, webhook_endpoints } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { newWebhookSecret } from '../../src/domain/secrets.js'
import { startWebhookDispatcher, type WebhookDispatcher, type WebhookDispatcherOptions } from '../../src/jobs/webhook-dispatcher.js'
import type { Timers } from '../../src/webhooks/send.js'
import { newTestDatabase } from './db.js'
import { currentTestFile } from './folder-suite.js'

const ownDatabases = new Map<string, Promise<DbHandle>>()

/**
 * The database of the test file whose tests run now, its own (newTestDatabase): made on its first
 * call, the same for the rest of the file. A folder's files run one after another in one process
 * (test/helpers/folder-suite.ts), and each gets a database of its own.
 */
export function webhookDatabase(): Promise<DbHandle> {
  const file = currentTestFile()
  let database = ownDatabases.get(file)
  if (!database) ownDatabases.set(file, (database = newTestDatabase()))
  return database
}

export type EndpointRow = typeof webhook_endpoints.$inferSelect
export type DeliveryRow = typeof webhook_deliveries.$inferSelect

/** An endpoint of its own project (so that only it receives the project's events), as the API would create it. */
export async function createEndpoint(url: string, options: { projectId?: string; db?: Database; secret?: string } = {}): Promise<EndpointRow> {
  const db = options.db ?? (await webhookDatabase()).db
  const projectId = options.projectId ?? (await makeRepos(db).projects.create({ name: 'Webhook test', plan: 'pro', beta_enabled: true })).project.id
  const [row] = await db
    .insert(webhook_endpoints)
    .values({ id: newId('we'), project_id: projectId, url, secret: options.secret ?? newWebhookSecret() })
    .returning()
  return row!
}

/** The endpoint as the API shows it: the `data` of its webhook.test event. */
export function endpointRecord(row: EndpointRow) {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}

/**
 * A webhook.test event for the endpoint's project, written through the outbox as a write would
 * (one delivery per enabled endpoint of the project). Returns the endpoint's delivery.
 * `deliveriesDue` is the repositories' hook (the dispatcher's wake).
 */
export async function recordEvent(endpoint: EndpointRow, options: { db?: Database; deliveriesDue?: () => void } = {}): Promise<{ eventId: string; deliveryId: string }> {
  const db = options.db ?? (await webhookDatabase()).db
  const repos = makeRepos(db, undefined, { deliveriesDue: options.deliveriesDue })
  const event = await repos.transaction((tx) => tx.outbox.record(endpoint.project_id, 'webhook.test', endpointRecord(endpoint)))
  const [delivery] = await db
    .select({ id: webhook_deliveries.id })
    .from(webhook_deliveries)
    .where(sql`${webhook_deliveries.event_id} = ${event.id} and ${webhook_deliveries.endpoint_id} = ${endpoint.id}`)
  if (!delivery) throw new Error(`no delivery of ${event.id} to ${endpoint.id}`)
  return { eventId: event.id, deliveryId: delivery.id }
}

export async function deliveryRow(id: string, db?: Database): Promise<DeliveryRow> {
  const [row] = await (db ?? (await webhookDatabase()).db).select().from(webhook_deliveries).where(eq(webhook_deliveries.id, id))
  return row!
}

export async function endpointRow(id: string, db?: Database): Promise<EndpointRow> {
  const [row] = await (db ?? (await webhookDatabase()).db).select().from(webhook_endpoints).where(eq(webhook_endpoints.id, id))
  return row!
}

/** Looks at `read()` every `everyMs` until `done` holds, and returns what it read then. */
export async function waitUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, everyMs = 10): Promise<T> {
  for (;;) {
    const value = await read()
    if (done(value)) return value
    await sleep(everyMs)
  }
}

/** Waits until the delivery is in `status` with at least `attempts` attempts made. */
export const deliveryReaches = (id: string, status: DeliveryRow['status'], attempts = 1, db?: Database) =>
  waitUntil(
    () => deliveryRow(id, db),
    (row) => row.status === status && row.attempts >= attempts && row.claimed_until === null,
  )

/**
 * Resolves once this process's HTTP client has the head of an answer from the receiver on `port`
 * (Node announces each response whose head has arrived), or of any answer without `port`.
 */
export function headArrived(tt: { teardown(fn: () => unknown): void }, port?: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const onResponse = (message: unknown) => {
      const host = (message as { request: ClientRequest }).request.getHeader('host')
      if (port !== undefined && host !== `127.0.0.1:${port}`) return
      unsubscribe('http.client.response.finish', onResponse)
      resolve()
    }
    subscribe('http.client.response.finish', onResponse)
    tt.teardown(() => unsubscribe('http.client.response.finish', onResponse))
  })
}

/** Deadline timers that fire only when the test says so: a deadline a slow machine cannot reach early. */
export function manualTimers(): Timers & { fire(): number; pending(): number } {
  const timers = new Map<number, () => void>()
  let next = 0
  return {
    setTimeout(callback) {
      timers.set(++next, callback)
      return next
    },
    clearTimeout(handle) {
      timers.delete(handle as number)
    },
    fire() {
      const due = [...timers.values()]
      timers.clear()
      for (const callback of due) callback()
      return due.length
    },
    pending: () => timers.size,
  }
}

export interface LogLine {
  level: 'error' | 'warn' | 'info'
  fields: unknown
  message: string
}

/** A logger that keeps what it is told, for the tests that read the dispatcher's log. */
export function recordingLog(): WebhookDispatcherOptions['log'] & { lines: LogLine[] } {
  const lines: LogLine[] = []
  const at =
    (level: LogLine['level']) =>
    (fields: unknown, message?: string) =>
      lines.push(typeof fields === 'string' ? { level, fields: {}, message: fields } : { level, fields, message: message ?? '' })
  const log = { lines, error: at('error'), warn: at('warn'), info: at('info'), debug: () => {}, trace: () => {}, fatal: at('error'), level: 'info' }
  return Object.assign(log, { child: () => log, silent: () => {} }) as unknown as WebhookDispatcherOptions['log'] & { lines: LogLine[] }
}

/**
 * A dispatcher on the test database, stopped when `tt` ends. Private networks are allowed (the
 * receivers listen on 127.0.0.1) unless the test turns the guard on; the retry schedule is an
 * hour unless given, so that a failed attempt is not retried under the test.
 */
export async function startDispatcher(
  tt: { teardown(fn: () => unknown): void },
  options: Partial<Omit<WebhookDispatcherOptions, 'config'>> & { schedule?: readonly number[]; allowPrivateNetworks?: boolean } = {},
): Promise<WebhookDispatcher> {
  const { schedule, allowPrivateNetworks, ...rest } = options
  const dispatcher = startWebhookDispatcher({
    db: (await webhookDatabase()).db,
    log: recordingLog(),
    config: { ...defaults, webhookRetryScheduleMs: schedule ?? [3_600_000], webhookAllowPrivateNetworks: allowPrivateNetworks ?? true },
    pollMs: 50,
    ...rest,
  })
  tt.teardown(() => dispatcher.stop())
  return dispatcher
}
