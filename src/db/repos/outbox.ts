// The write side of webhooks: an event and its deliveries, written in the transaction of the
// change that causes them (the transactional outbox). A write the API acknowledged always has its
// event, even if the process dies the next instant; one that fails or rolls back never does.
import { sql } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import { EVERY_TYPE, type EventType } from '../../webhooks/event-types.js'
import type { Database } from '../client.js'
import { rowsOf } from '../results.js'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
/**
 * A delivery id (`wd_` and 21 characters, as domain/ids.ts shapes them) made by the database, one
 * per endpoint row: the subquery names the row, so it runs again for each. Not a secret.
 */
const deliveryId = sql.raw(
  `(select 'wd_' || string_agg(substr('${ALPHABET}', 1 + floor(random() * 62)::int, 1), '') from generate_series(1, 21) where e.id is not null)`,
)

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
          with event as (
            insert into events (id, project_id, type, data) values (${id}, ${projectId}, ${type}, ${JSON.stringify(data)})
            returning id, project_id, type, created_at
          ), delivery as (
            insert into webhook_deliveries (id, project_id, endpoint_id, event_id, event_type, next_attempt_at, created_at)
            select ${deliveryId}, event.project_id, e.id, event.id, event.type, event.created_at, event.created_at
            from event join webhook_endpoints e on e.project_id = event.project_id
            where e.enabled and (${EVERY_TYPE} = any(e.events) or event.type = any(e.events))
            returning 1
          )
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
      const delivery = newId('wd')
      const written = rowsOf<{ id: string }>(
        await db.execute(sql`
          with event as (
            insert into events (id, project_id, type, data) values (${id}, ${projectId}, ${type}, ${JSON.stringify(data)})
            returning id, project_id, type, created_at
          )
          insert into webhook_deliveries (id, project_id, endpoint_id, event_id, event_type, next_attempt_at, created_at)
          select ${delivery}, event.project_id, e.id, event.id, event.type, event.created_at, event.created_at
          from event join webhook_endpoints e on e.project_id = event.project_id and e.id = ${endpointId}
          returning id`),
      )
      if (written.length === 0) throw new Error(`${endpointId} is not an endpoint of ${projectId}`)
      inTransaction.due()
      return { id, delivery }
    },
  }
}
