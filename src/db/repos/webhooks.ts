// The API's side of webhooks: a project's endpoints, their deliveries as the API shows and retries
// them, and the event log's reads. Events and their deliveries are written by the outbox
// (outbox.ts); the dispatcher claims and attempts deliveries with its own queries.
import { and, count, eq, exists, inArray, isNotNull, lte, sql } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import type { EventRow } from '../../webhooks/event-record.js'
import type { Database } from '../client.js'
import { parkDeliveries, unparkDeliveries } from './dispatch.js'
import { entityTagOf, tagMatches, tagSatisfies, type Precondition } from './etag.js'
import { descNullsLast } from './order.js'
import { largeValue, pageWithin, type PageRead, type Reserve } from './large-values.js'
import { inEventWindow } from './outbox.js'
import { pageValues, rowsAfter, type PageOptions } from './page.js'
import { eventInScope, projectIdOf, type ProjectScope } from './scope.js'
import { rowsOf } from '../results.js'
import { events, projects, webhook_deliveries, webhook_endpoints } from '../schema.js'

/** At most this many endpoints per project (api-contract §10). */
export const MAX_ENDPOINTS = 10

const e = webhook_endpoints
const d = webhook_deliveries

// Timestamps are written by the database clock, truncated (a timestamptz(3) column would round
// now() up half the time), so a delivery made due "now" is due in the very next query.
const dbNow = sql`date_trunc('milliseconds', now())`
// updated_at moves forward on every write, even two within one millisecond: it is the version in
// the ETag below, so each write makes a new tag.
const nextUpdatedAt = sql`greatest(${dbNow}, ${e.updated_at} + interval '1 millisecond')`

// An endpoint's representation is made of these columns alone: neither its secrets nor the
// dispatcher's bookkeeping (failing_since) are shown, so they are not in its tag either.
const shown = {
  id: e.id,
  url: e.url,
  events: e.events,
  description: e.description,
  enabled: e.enabled,
  disabled_reason: e.disabled_reason,
  created_at: e.created_at,
  updated_at: e.updated_at,
}
const tag = entityTagOf(sql`row(${sql.join(Object.values(shown), sql`, `)})`)
const tagged = { ...shown, etag: tag }
// In an UPDATE's SET, the columns read the row as it was.
const enabling = { disabled_reason: null, failing_since: sql`case when ${e.enabled} then ${e.failing_since} end` }

/** An endpoint as the API reads and writes it: what its record shows, and its ETag (etag.ts); never its secret. */
export type EndpointRow = Pick<typeof e.$inferSelect, keyof typeof shown> & { etag: string }
/** What a client may set; the rest (id, project, secrets, disabled_reason, timestamps) is the server's. */
export type EndpointFields = Pick<typeof e.$inferSelect, 'url' | 'events' | 'description' | 'enabled'>
export type EndpointPatch = Partial<EndpointFields>

export type EndpointCreation = { outcome: 'created'; row: EndpointRow } | { outcome: 'limit_exceeded' }
export type EndpointUpdate = { outcome: 'updated'; row: EndpointRow } | { outcome: 'not_found' } | { outcome: 'precondition_failed' }
export type EndpointDeletion = 'deleted' | 'not_found' | 'precondition_failed'
/** Where a purge of a deleted endpoint's deliveries got to: the last one deleted, in the order of its index. */
export type DeliveryPosition = { at: Date; id: string }

/**
 * The endpoint ids in the deliveries (a loose index scan: one probe a distinct endpoint) that
 * have no endpoint row: deleted endpoints whose deliveries are still to be purged.
 */
const deletedWithDeliveriesQuery = sql`
  with recursive present (endpoint_id) as (
    (select endpoint_id from webhook_deliveries order by endpoint_id limit 1)
    union all
    select (select d.endpoint_id from webhook_deliveries d where d.endpoint_id > p.endpoint_id order by d.endpoint_id limit 1)
    from present p
    where p.endpoint_id is not null
  )
  select p.endpoint_id from present p
  where p.endpoint_id is not null and not exists (select 1 from webhook_endpoints e where e.id = p.endpoint_id)`

// What a delivery's record shows: not its project, nor claimed_until (which instance is attempting it).
const deliveryColumns = {
  id: d.id,
  endpoint_id: d.endpoint_id,
  event_id: d.event_id,
  event_type: d.event_type,
  status: d.status,
  attempts: d.attempts,
  last_attempt_at: d.last_attempt_at,
  last_response_status: d.last_response_status,
  last_error: d.last_error,
  next_attempt_at: d.next_attempt_at,
  created_at: d.created_at,
}
export type DeliveryRow = Pick<typeof d.$inferSelect, keyof typeof deliveryColumns>
export type DeliveryStatus = DeliveryRow['status']
export type DeliveryRetry = { outcome: 'retried'; row: DeliveryRow } | { outcome: 'not_found' } | { outcome: 'endpoint_disabled'; reason: EndpointRow['disabled_reason'] }

const eventColumns = { id: events.id, type: events.type, data: events.data, created_at: events.created_at }

interface DeliveryListOptions extends PageOptions {
  status?: DeliveryStatus
}

/** An event as a page's read has it (large-values.ts): its record null when withheld, with its size. */
type ListedEvent = Omit<EventRow, 'data'> & { data: string | null; bytes: number | null }

interface EventListOptions extends PageOptions {
  type?: string
}

/**
 * `inTransaction`: set on the repositories of a transaction (repos.transaction), with what to call
 * when a delivery becomes due; the writes that need one (a create's count, a retry's wake-up)
 * refuse to run outside one.
 */
export function webhooksRepo(db: Database, inTransaction: { due(): void } | undefined) {
  const ofProject = (scope: ProjectScope, id: string) => and(eq(e.project_id, projectIdOf(scope)), eq(e.id, id))
  const inTransactionOnly = (what: string) => {
    if (!inTransaction) throw new Error(`webhooks.${what} must run in a transaction: use repos.transaction()`)
    return inTransaction
  }

  async function get(scope: ProjectScope, id: string): Promise<EndpointRow | undefined> {
    const [row] = await db.select(tagged).from(e).where(ofProject(scope, id))
    return row
  }

  // A deleted endpoint's deliveries wait for purgeDeliveriesOf: none is shown meanwhile. The endpoint
  // is a constant of the query, so PostgreSQL checks it once (an InitPlan), not once a row.
  const endpointExists = (scope: ProjectScope, endpointId: string) =>
    exists(db.select({ id: e.id }).from(e).where(ofProject(scope, endpointId)))
  // Older events are invisible to the API, pruned or not, and so are their deliveries: a delivery
  // of an event gone from the log was listed, and its retry sent the event again, until pruning
  // (found by a review).
  const eventInWindow = inEventWindow(events.created_at)
  const deliveryInWindow = inEventWindow(d.created_at)
  const deliveryOf = (scope: ProjectScope, endpointId: string, id: string) =>
    and(eq(d.project_id, projectIdOf(scope)), eq(d.endpoint_id, endpointId), eq(d.id, id), deliveryInWindow, endpointExists(scope, endpointId))
  // An event of the beta area is shown while the project has the beta feature.
  const shownEvent = (scope: ProjectScope) => eventInScope(events.type, sql`${projectIdOf(scope)}`)

  // The page queries, each in the order of an index (test/webhooks/list-plans.test.ts holds it).
  const endpointsQuery = (scope: ProjectScope, options: PageOptions) => {
    const page = pageValues(options)
    return db
      .select(tagged)
      .from(e)
      .where(and(eq(e.project_id, projectIdOf(scope)), rowsAfter(e.created_at, e.id, page.after)))
      .orderBy(descNullsLast(e.created_at), descNullsLast(e.id))
      .limit(options.limit)
      .offset(page.offset)
  }

  const deliveriesQuery = (scope: ProjectScope, endpointId: string, options: DeliveryListOptions) => {
    const page = pageValues(options)
    return db
      .select(deliveryColumns)
      .from(d)
      .where(
        and(
          eq(d.endpoint_id, endpointId),
          eq(d.project_id, projectIdOf(scope)),
          endpointExists(scope, endpointId),
          deliveryInWindow,
          options.status ? eq(d.status, options.status) : undefined,
          rowsAfter(d.created_at, d.id, page.after),
        ),
      )
      .orderBy(descNullsLast(d.created_at), descNullsLast(d.id))
      .limit(options.limit)
      .offset(page.offset)
  }

  /** A page of events, read as `read` says (large-values.ts): each event's record, its JSON text, is its large value. */
  const eventsQuery = (scope: ProjectScope, options: EventListOptions, read: PageRead = 'withheld') => {
    const page = pageValues(options)
    // Sent as it is stored: the record's JSON text (webhooks/event-record.ts).
    const { value: data, bytes } = largeValue(events.data, read, 'stored')
    return db
      .select({ ...eventColumns, data, bytes })
      .from(events)
      .where(
        and(
          eq(events.project_id, projectIdOf(scope)),
          options.type ? eq(events.type, options.type) : undefined,
          eventInWindow,
          shownEvent(scope),
          rowsAfter(events.created_at, events.id, page.after),
        ),
      )
      .orderBy(descNullsLast(events.created_at), descNullsLast(events.id))
      .limit(options.limit)
      .offset(page.offset)
  }

  /**
   * Endpoints whose previous secret has expired, soonest expired first, locked unless another
   * transaction holds them (a rotation, a dispatcher recording): from
   * webhook_endpoints_previous_secret_idx (a test holds it to that).
   */
  const expiredSecretsClaim = (limit: number) =>
    db
      .select({ id: e.id })
      .from(e)
      .where(and(isNotNull(e.previous_secret), lte(e.previous_secret_expires_at, sql`now()`)))
      .orderBy(e.previous_secret_expires_at)
      .limit(limit)
      .for('no key update', { skipLocked: true })

  /** purgeDeliveriesOf's claim, in the order of webhook_deliveries_endpoint_created_idx, from `before` on. */
  const purgeClaim = (endpointId: string, before: DeliveryPosition | undefined, limit: number) =>
    db
      .select({ id: d.id })
      .from(d)
      .where(and(eq(d.endpoint_id, endpointId), rowsAfter(d.created_at, d.id, before && { at: before.at.toISOString(), id: before.id })))
      .orderBy(descNullsLast(d.created_at), descNullsLast(d.id))
      .limit(limit)
      .for('update', { skipLocked: true })

  /**
   * The endpoint, locked against a change or a delete until the caller's transaction ends: what
   * it is told here (enabled, say) stays true while the caller writes for it.
   */
  async function lock(projectId: string, id: string): Promise<EndpointRow | undefined> {
    inTransactionOnly('lock')
    const [row] = await db.select(tagged).from(e).where(ofProject(projectId, id)).for('share')
    return row
  }

  return {
    get,

    /**
     * Inserts the endpoint unless the project has MAX_ENDPOINTS already. In the caller's
     * transaction: the project's row is locked first, so that concurrent creates count one after
     * another and never make an eleventh (FOR NO KEY UPDATE: other writes of the project that
     * only reference its row do not wait).
     */
    async create(projectId: string, fields: EndpointFields, secret: string): Promise<EndpointCreation> {
      inTransactionOnly('create')
      await db.select({ id: projects.id }).from(projects).where(eq(projects.id, projectId)).for('no key update')
      const [existing] = await db.select({ n: count() }).from(e).where(eq(e.project_id, projectId))
      if ((existing?.n ?? 0) >= MAX_ENDPOINTS) return { outcome: 'limit_exceeded' }
      const [row] = await db
        .insert(e)
        .values({ id: newId('we'), project_id: projectId, ...fields, secret, created_at: dbNow, updated_at: dbNow })
        .returning(tagged)
      return { outcome: 'created', row: row! }
    },

    endpointsQuery,

    /** `limit` endpoints from `offset` or after a row, newest first; the caller asks for one more than a page. */
    list: async (scope: ProjectScope, options: PageOptions): Promise<EndpointRow[]> => endpointsQuery(scope, options),

    /**
     * Applies the patch in one UPDATE whose WHERE holds the tag under a precondition (etag.ts).
     * Enabling a disabled endpoint clears why the service disabled it and its record of failing
     * attempts (an enabled one keeps that record, so that sending `enabled: true` again and again
     * cannot hold off the five-day rule); disabling leaves disabled_reason as it is (null: the
     * team disabled it). In the caller's transaction: `enabled: false` parks the endpoint's
     * pending deliveries and `enabled: true` makes those parked due now, waking the dispatcher
     * once it commits (dispatch.ts, parkDeliveries). Without a field, the endpoint as it is. When
     * no row comes back, a read tells a missing endpoint from a changed one (412).
     */
    async update(projectId: string, id: string, patch: EndpointPatch, precondition?: Precondition): Promise<EndpointUpdate> {
      const transaction = inTransactionOnly('update')
      if (Object.keys(patch).length > 0) {
        const [row] = await db
          .update(e)
          .set({ ...patch, ...(patch.enabled === true ? enabling : {}), updated_at: nextUpdatedAt })
          .where(and(ofProject(projectId, id), tagMatches(tag, precondition)))
          .returning(tagged)
        if (row && patch.enabled === false) await parkDeliveries(db, [id])
        if (row && patch.enabled === true && (await unparkDeliveries(db, id)) > 0) transaction.due()
        if (row) return { outcome: 'updated', row }
      }
      const current = await get(projectId, id)
      if (!current) return { outcome: 'not_found' }
      if (!tagSatisfies(current.etag, precondition)) return { outcome: 'precondition_failed' }
      if (Object.keys(patch).length === 0) return { outcome: 'updated', row: current }
      // The write found no row with the tag, and the read finds one: it changed in between (every
      // write moves updated_at, so it cannot have come back to the tag the client holds).
      return { outcome: 'precondition_failed' }
    },

    /**
     * Deletes the endpoint; its events stay. Its deliveries are left to event pruning
     * (purgeDeliveriesOf), so that this is one row's work whatever the endpoint's history: from
     * now on no read shows them (endpointExists) and no claim takes them (it joins the endpoint).
     */
    async delete(projectId: string, id: string, precondition?: Precondition): Promise<EndpointDeletion> {
      const rows = await db
        .delete(e)
        .where(and(ofProject(projectId, id), tagMatches(tag, precondition)))
        .returning({ id: e.id })
      if (rows.length > 0) return 'deleted'
      // Only a conditional delete can have found the endpoint and left it.
      return precondition !== undefined && precondition !== '*' && (await get(projectId, id)) ? 'precondition_failed' : 'not_found'
    },

    /**
     * Makes `secret` the endpoint's signing secret; the one it replaces signs deliveries too for
     * 24 hours (a second rotation within them replaces that one). The record is unchanged.
     */
    async rotateSecret(projectId: string, id: string, secret: string): Promise<EndpointRow | undefined> {
      const [row] = await db
        .update(e)
        .set({ previous_secret: sql`${e.secret}`, previous_secret_expires_at: sql`${dbNow} + interval '24 hours'`, secret })
        .where(ofProject(projectId, id))
        .returning(tagged)
      return row
    },

    /**
     * Clears up to `limit` previous secrets whose 24 hours after a rotation have passed, so that
     * a secret no delivery is signed with any more is not kept; returns how many. Endpoints held
     * by another transaction are skipped, not waited for (the next run clears them). Nothing the
     * record shows changes, so neither does its ETag.
     */
    async clearExpiredSecrets(limit: number): Promise<number> {
      const rows = await db
        .update(e)
        .set({ previous_secret: null, previous_secret_expires_at: null })
        .where(inArray(e.id, expiredSecretsClaim(limit)))
        .returning({ id: e.id })
      return rows.length
    },
    /** clearExpiredSecrets's claim, for EXPLAIN. */
    expiredSecretsClaim,

    /**
     * The endpoints that have deliveries and no longer exist (deleted since, by this version or
     * an earlier one, which removed them with a cascading key): one probe of the deliveries'
     * endpoint index per endpoint that has any, and one of the endpoints' primary key.
     */
    async deletedWithDeliveries(): Promise<string[]> {
      const rows = rowsOf<{ endpoint_id: string }>(await db.execute(deletedWithDeliveriesQuery))
      return rows.map((row) => row.endpoint_id)
    },
    deletedWithDeliveriesQuery,

    /**
     * Deletes up to `limit` deliveries of a deleted endpoint, newest first from `before` (the
     * last one the previous batch deleted), so that each batch starts where the one before it
     * ended instead of reading past the index entries it left. Rows another transaction holds
     * (an attempt being recorded, another instance purging) are skipped, not waited for: the
     * next run takes them. Returns how many, and where this batch ended.
     */
    async purgeDeliveriesOf(endpointId: string, before: DeliveryPosition | undefined, limit: number): Promise<{ deleted: number; last?: DeliveryPosition }> {
      const rows = await db.delete(d).where(inArray(d.id, purgeClaim(endpointId, before, limit))).returning({ at: d.created_at, id: d.id })
      const last = rows.reduce<DeliveryPosition | undefined>((min, row) => (!min || row.at < min.at || (row.at.getTime() === min.at.getTime() && row.id < min.id) ? row : min), undefined)
      return { deleted: rows.length, last }
    },
    purgeClaim,

    /** The endpoint's signing secret as it is now (an Idempotency-Key replay answers it; nothing else reads it here). */
    async secret(projectId: string, id: string): Promise<string | undefined> {
      const [row] = await db.select({ secret: e.secret }).from(e).where(ofProject(projectId, id))
      return row?.secret
    },

    lock,

    /**
     * `limit` deliveries of the endpoint from `offset` or after a row, newest first (the caller
     * asks for one more than a page); undefined when the endpoint is not the project's.
     */
    async deliveries(scope: ProjectScope, endpointId: string, options: DeliveryListOptions): Promise<DeliveryRow[] | undefined> {
      const rows = await deliveriesQuery(scope, endpointId, options)
      if (rows.length > 0) return rows
      // An empty page of a real endpoint, or no such endpoint: only then is a second query needed.
      return (await get(scope, endpointId)) ? rows : undefined
    },

    deliveriesQuery,

    async delivery(scope: ProjectScope, endpointId: string, id: string): Promise<DeliveryRow | undefined> {
      const [row] = await db.select(deliveryColumns).from(d).where(deliveryOf(scope, endpointId, id))
      return row
    },

    /**
     * Makes the delivery pending and due now, whatever its status (its attempts stay counted),
     * unless its endpoint is disabled; in the caller's transaction, which wakes the dispatcher
     * once it commits. The endpoint is locked first (lock), so that a PATCH disabling it
     * meanwhile is waited for and then seen: a retry never makes due a delivery that the
     * disabling parked.
     */
    async retry(projectId: string, endpointId: string, id: string): Promise<DeliveryRetry> {
      const transaction = inTransactionOnly('retry')
      const endpoint = await lock(projectId, endpointId)
      if (!endpoint) return { outcome: 'not_found' }
      if (!endpoint.enabled) {
        const [found] = await db.select({ id: d.id }).from(d).where(deliveryOf(projectId, endpointId, id))
        return found ? { outcome: 'endpoint_disabled', reason: endpoint.disabled_reason } : { outcome: 'not_found' }
      }
      const [row] = await db.update(d).set({ status: 'pending', next_attempt_at: dbNow }).where(deliveryOf(projectId, endpointId, id)).returning(deliveryColumns)
      if (!row) return { outcome: 'not_found' }
      transaction.due()
      return { outcome: 'retried', row }
    },

    eventsQuery,

    /**
     * `limit` events of the last EVENT_LOG_DAYS from `offset` or after a row, newest first
     * (the caller asks for one more than a page); those of the beta area only while the project
     * has the beta feature. `reserve` takes the bytes of their records before they are read when
     * one is large (large-values.ts).
     */
    events: (scope: ProjectScope, options: EventListOptions, reserve: Reserve): Promise<EventRow[]> =>
      pageWithin<ListedEvent, 'data'>('data', (read) => eventsQuery(scope, options, read), reserve),

    /** The event, while it is in the window (and, of the beta area, while the project has the beta feature). */
    async event(scope: ProjectScope, id: string): Promise<EventRow | undefined> {
      const [row] = await db
        .select(eventColumns)
        .from(events)
        .where(and(eq(events.project_id, projectIdOf(scope)), eq(events.id, id), eventInWindow, shownEvent(scope)))
      return row
    },
  }
}
