// A project's event log, read straight from the events table while GET /v1/events is being
// built; the tests read it only through these helpers, so that they can move to the API.
import { and, asc, eq } from 'drizzle-orm'
import { makeRepos } from '../../src/db/repos/index.js'
import { newId } from '../../src/domain/ids.js'
import { publicationSweep } from '../../src/jobs/publication-sweep.js'
import { events, webhook_deliveries, webhook_endpoints } from '../../src/db/schema.js'
import { testDatabase } from './db.js'

export interface LoggedEvent {
  id: string
  type: string
  created_at: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any
}

/** The project's events, oldest first (those of one type when `type` is given). */
export async function projectEvents(projectId: string, type?: string): Promise<LoggedEvent[]> {
  const { db } = await testDatabase()
  const rows = await db
    .select()
    .from(events)
    .where(and(eq(events.project_id, projectId), type === undefined ? undefined : eq(events.type, type)))
    .orderBy(asc(events.created_at), asc(events.id))
  return rows.map((row) => ({ id: row.id, type: row.type, created_at: row.created_at.toISOString(), data: JSON.parse(row.data) }))
}

/** The types of the project's events, oldest first. */
export const eventTypes = async (projectId: string): Promise<string[]> => (await projectEvents(projectId)).map((event) => event.type)

/** The deliveries written for an event (one per subscribed endpoint). */
export async function deliveriesOf(eventId: string) {
  const { db } = await testDatabase()
  return db.select().from(webhook_deliveries).where(eq(webhook_deliveries.event_id, eventId))
}

/**
 * An endpoint of the project subscribed to `types` (every type by default), written straight to
 * its table while the endpoint operations are being built: what a delivery is made for.
 */
export async function subscribe(projectId: string, types: string[] = ['*'], enabled = true): Promise<string> {
  const { db } = await testDatabase()
  const id = newId('we')
  await db.insert(webhook_endpoints).values({ id, project_id: projectId, url: 'https://receiver.example/hook', events: types, enabled, secret: 'whsec_dGVzdA==' })
  return id
}

/** What a job logs, kept for a test to read. */
export function logSink() {
  const lines: { level: 'warn' | 'info'; fields: unknown; message: string }[] = []
  const log = (level: 'warn' | 'info') => (fields: unknown, message?: string) => void lines.push({ level, fields: message === undefined ? undefined : fields, message: message ?? String(fields) })
  return { lines, log: { warn: log('warn'), info: log('info') } as never }
}

/**
 * One sweep of scheduled publications, as an instance's timer runs it: every project's entries
 * whose time has come (other test files' too: assert on a project's events, not on the count).
 */
export async function sweepPublications(): Promise<number> {
  return publicationSweep({ repos: makeRepos((await testDatabase()).db), log: logSink().log }).runOnce()
}
