// The write side of webhooks: an event and its deliveries, written in the transaction of the
// change that causes them (the transactional outbox). A write the API acknowledged always has its
// event, even if the process dies the next instant; one that fails or rolls back never does.
import { inArray, lt, sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import { ID_ALPHABET, ID_RANDOM_LENGTH, newId } from '../../domain/ids.js'
import { EVENT_LOG_DAYS } from '../../webhooks/event-record.js'
import { EVERY_TYPE, type EventType } from '../../webhooks/event-types.js'
import type { Database } from '../client.js'
import { rowsOf } from '../results.js'
import { events } from '../schema.js'

/** How long the event log keeps an event, as an interval: GET /v1/events shows this much, pruning deletes what is older. */
export const EVENT_RETENTION = sql.raw(`interval '${EVENT_LOG_DAYS} days'`)

/**
 * Whether a row of that time is in the event log's window: an event, or a delivery, whose time is
 * its event's (insertDeliveries writes it so). What is older is invisible to the API and never
 * sent, pruned or not.
 */
export const inEventWindow = (createdAt: SQLWrapper) => sql`${createdAt} > now() - ${EVENT_RETENTION}`

/**
 * A delivery id (`wd_` and 21 characters, as domain/ids.ts shapes them) made by the database, one
 * per endpoint row: the subquery names the row, so it runs again for each. Not a secret.
 */
const deliveryId = sql.raw(
  `(select 'wd_' || string_agg(substr('${ID_ALPHABET}', 1 + floor(random() * ${ID_ALPHABET.length})::int, 1), '') from generate_series(1, ${ID_RANDOM_LENGTH}) where e.id is not null)`,
)

/**
 * The one insert of events, for a CTE named `event`: `source` selects (or `values`) their id,
 * project_id, type and data; it returns what their deliveries need.
 */
const insertEvents = (source: SQL) => sql`insert into events (id, project_id, type, data) ${source} returning id, project_id, type, created_at`

/**
 * The one insert of deliveries, of the events the CTE `event` inserted: one pending delivery,
 * due now, for each endpoint `e` of the event's project that `to` picks; returns their ids.
 * The endpoints are read FOR KEY SHARE, so that one deleted meanwhile is skipped once its
 * deletion commits, and no delivery is made for an endpoint that is gone (there is no foreign
 * key to refuse one; when there was, this race failed the write with its violation, a 500 the
 * benchmark found with an endpoint deleted under load).
 */
const insertDeliveries = (to: SQL) => sql`
  insert into webhook_deliveries (id, project_id, endpoint_id, event_id, event_type, next_attempt_at, created_at)
  select ${deliveryId}, event.project_id, e.id, event.id, event.type, event.created_at, event.created_at
  from event join webhook_endpoints e on e.project_id = event.project_id
  where ${to}
  for key share of e
  returning id`

/** The endpoints an event goes to: the enabled ones subscribed to its type. */
const subscribed = sql`e.enabled and (${EVERY_TYPE} = any(e.events) or event.type = any(e.events))`

/**
 * An event and its deliveries as CTEs (`event`, `delivery`) of the statement that makes the
 * change, for a write that stays one statement (enrollment, the hot write): a statement is
 * atomic, so the event commits or rolls back with the change as it would in a transaction, at
 * no extra round trip. `source` selects the events' (id, project_id, type, data), typically one
 * row per row the change wrote (none when it wrote none). Select `deliveries` in the statement
 * for how many deliveries it made due.
 */
export function eventCtes(db: Database, source: SQL) {
  const event = db.$with('event', { id: sql<string>`id` }).as(insertEvents(source))
  const delivery = db.$with('delivery', {}).as(insertDeliveries(subscribed))
  return { ctes: [event, delivery], deliveries: sql<number>`(select count(*)::int from delivery)`.mapWith(Number) }
}

/**
 * An event's `data` when the resource's record holds one timestamp that only the writing
 * statement knows (a column it sets to now()): the resource's own mapper makes the record with a
 * stand-in for that timestamp (timestampedData, the two parameters), and the statement puts the
 * column's value in the stand-in's place, formatted as the mapper formats dates
 * (Date#toISOString: UTC, milliseconds, `Z`). Nothing else of the record is made in SQL; a test
 * holds the result to the resource's GET.
 */
export const timestampedDataSql = (column: SQLWrapper): SQL<string> =>
  sql<string>`${sql.placeholder('dataBefore')}::text || '"' || to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"' || ${sql.placeholder('dataAfter')}::text`

/** The parameters of timestampedDataSql: the record `record` makes, as JSON text on either side of its timestamp. */
export function timestampedData(record: (at: Date) => unknown): { dataBefore: string; dataAfter: string } {
  const json = JSON.stringify(record(STAND_IN))
  // JSON.stringify escapes every quote inside a string, so the quoted stand-in can only be a
  // whole value, the one it stood in for.
  const at = json.indexOf(STAND_IN_JSON)
  if (at < 0 || json.indexOf(STAND_IN_JSON, at + 1) >= 0) throw new Error('the record must hold the stand-in timestamp exactly once')
  return { dataBefore: json.slice(0, at), dataAfter: json.slice(at + STAND_IN_JSON.length) }
}
/** A date no record holds (the year 0). */
const STAND_IN = new Date('0000-01-01T00:00:00.000Z')
const STAND_IN_JSON = JSON.stringify(STAND_IN.toISOString())

/** One event's values, for insertEvents: `data` is the resource's record, as JSON text. */
const eventValues = (id: string, projectId: string, type: EventType, data: unknown) => sql`values (${id}, ${projectId}, ${type}, ${JSON.stringify(data)})`

export interface RecordedEvent {
  id: string
  /** Deliveries written for it: one per enabled endpoint of the project subscribed to its type. */
  deliveries: number
}

/**
 * `inTransaction`: set on the repositories of a transaction (repos.transaction), with what to
 * call when a delivery becomes due (the dispatcher is woken once the transaction commits);
 * outside one, the outbox refuses to write, since an event written on its own could survive the
 * change's rollback or be lost after its commit.
 */
export function outboxRepo(db: Database, inTransaction: { due(): void } | undefined) {
  /** The oldest expired events, locked unless another transaction holds them: from events_created_idx (a test holds it to that). */
  const expiredClaim = (limit: number) =>
    db
      .select({ id: events.id })
      .from(events)
      .where(lt(events.created_at, sql`now() - ${EVENT_RETENTION}`))
      .orderBy(events.created_at)
      .limit(limit)
      .for('update', { skipLocked: true })

  return {
    /**
     * Writes the event (`data`: the resource's record as its GET returns it) and, in the same
     * statement, a pending delivery, due now, for each enabled endpoint subscribed to `type`.
     */
    async record(projectId: string, type: EventType, data: unknown): Promise<RecordedEvent> {
      if (!inTransaction) throw new Error('outbox.record must run in a transaction with the change it announces: use repos.transaction()')
      const id = newId('evt')
      const [row] = rowsOf<{ deliveries: number }>(
        await db.execute(sql`
          with event as (${insertEvents(eventValues(id, projectId, type, data))}), delivery as (${insertDeliveries(subscribed)})
          select count(*)::int as deliveries from delivery`),
      )
      const deliveries = row?.deliveries ?? 0
      if (deliveries > 0) inTransaction.due()
      return { id, deliveries }
    },

    /**
     * Writes the event and one pending delivery of it, due now, to that endpoint of the project
     * alone, whatever it subscribes to (a test delivery). The caller has checked, under a lock,
     * that the endpoint is the project's and may be sent to (webhooks.lock).
     */
    async recordFor(projectId: string, endpointId: string, type: EventType, data: unknown): Promise<{ id: string; delivery: string }> {
      if (!inTransaction) throw new Error('outbox.recordFor must run in a transaction: use repos.transaction()')
      const id = newId('evt')
      const [written] = rowsOf<{ id: string }>(
        await db.execute(sql`
          with event as (${insertEvents(eventValues(id, projectId, type, data))}), delivery as (${insertDeliveries(sql`e.id = ${endpointId}`)})
          select id from delivery`),
      )
      if (!written) throw new Error(`${endpointId} is not an endpoint of ${projectId}`)
      inTransaction.due()
      return { id, delivery: written.id }
    },

    /**
     * Deletes up to `limit` events older than EVENT_RETENTION, oldest first, and their
     * deliveries (a cascading key), in one statement of its own; returns how many. Rows another
     * transaction holds (another instance pruning) are skipped, not waited for.
     */
    async pruneExpired(limit: number): Promise<number> {
      const rows = await db.delete(events).where(inArray(events.id, expiredClaim(limit))).returning({ id: events.id })
      return rows.length
    },
    /** pruneExpired's claim, for EXPLAIN. */
    expiredClaim,
  }
}
