// The dispatcher's side of webhook deliveries (src/jobs/webhook-dispatcher.ts): claiming due
// deliveries so that no two attempts at one run at once, on any number of instances, and
// recording what came of each attempt. Every rule that involves time is decided by the
// database's clock, the one clock all instances share.
import { randomUUID } from 'node:crypto'
import { sql, type SQL } from 'drizzle-orm'
import { eventJson } from '../../webhooks/event-record.js'
import type { Database } from '../client.js'
import { rowsOf } from '../results.js'
import { inEventWindow } from './outbox.js'
import { eventInScope } from './scope.js'

/** What an attempt needs, claimed for this instance until `claimedAt + lease`. */
export interface ClaimedDelivery {
  id: string
  /** Names this claim: the outcome is recorded only while it is still the delivery's claim. */
  token: string
  endpointId: string
  url: string
  /** The endpoint's secret, then the previous one while it is still valid after a rotation. */
  secrets: string[]
  eventId: string
  /** The request body, exactly as the event log holds the event (eventJson). */
  body: string
  /** Attempts made before this one. */
  attempts: number
  /** When the delivery was written (with its event), for the delivery latency. */
  createdAt: Date
  /** The database's time of the claim: when this attempt began (last_attempt_at). */
  claimedAt: Date
  /** Its next_attempt_at when claimed: a retry asked for during the attempt changes it (record). */
  dueAt: Date
}

/** What a claim took, and whether due deliveries were left that another claim may take at once. */
export interface Claim {
  deliveries: ClaimedDelivery[]
  /**
   * The claim passed over deliveries it had chosen, that another instance was claiming or
   * recording at that moment: others of their endpoints may be due, for another claim at once.
   */
  more: boolean
}

export interface ClaimOptions {
  /** Deliveries claimed at most. */
  limit: number
  /**
   * Deliveries (ids) of this instance whose attempts have ended, their outcomes not yet
   * recorded: their claims still hold them, but they are not counted as attempts in flight.
   */
  ended?: readonly string[]
  /** Attempts in flight to one endpoint at most, on all instances together. */
  perEndpoint: number
  /** Attempts in flight to an endpoint that is failing (failing_since set) at most: a probe, not a backlog. */
  perFailingEndpoint: number
  /** Attempts in flight to one project's endpoints at most, on all instances together. */
  perProject: number
  /** How long the claim holds: past it, another instance may claim the delivery (this one died). */
  leaseMs: number
  /**
   * The longest an attempt is under way (its deadline). A claim older than this keeps its
   * delivery until its lease runs out, but no longer counts against the endpoint's limit: its
   * attempt has ended, or its instance died during it, and the endpoint's other deliveries go on.
   */
  attemptMs: number
}

/** What came of one attempt. */
export interface Outcome {
  id: string
  token: string
  /** When the attempt began (ClaimedDelivery.claimedAt). */
  startedAt: Date
  /** The delivery's next_attempt_at when it was claimed (ClaimedDelivery.dueAt). */
  dueAt: Date
  /** The receiver's status; null when it gave none. */
  status: number | null
  /** last_error; null on success. */
  error: string | null
  succeeded: boolean
  /** It answered 410 Gone: the delivery fails and its endpoint is disabled. */
  gone: boolean
  /** Milliseconds until the next attempt; null when the retry schedule is spent (the delivery fails). */
  retryInMs: number | null
}

export interface Recorded {
  /** Deliveries updated (an outcome whose claim had been taken over since is dropped), with their new status. */
  deliveries: { id: string; status: 'pending' | 'succeeded' | 'failed' }[]
  /** Endpoints this record disabled, and why. */
  disabled: { id: string; reason: 'gone' | 'failing' }[]
  /**
   * The endpoints whose pending deliveries may need parking (parkDeliveries parks those of the
   * ones disabled by the time it runs): those this record disabled, and those of every delivery
   * it left pending. The record cannot tell which of the latter are disabled: the team may
   * disable one (a PATCH) while the attempt is recorded, in a transaction this statement's
   * snapshot does not see, and whose own park passed over the delivery this record held.
   */
  toPark: string[]
}

/** Five days in which every attempt failed disable an endpoint (api-contract §10). */
const FAILING_DISABLES_AFTER = sql.raw(`interval '5 days'`)

const ms = (value: unknown) => new Date(Number(value))

/** Whether the delivery `d` may be sent as far as its project is concerned (scope.ts, eventInScope). */
const projectSends = eventInScope(sql.raw('d.event_type'), sql.raw('d.project_id'))

/** The claim's statement (dispatchRepo.claim), also for EXPLAIN. */
export function claimQuery(options: ClaimOptions, token: string): SQL {
  return sql`
    with recursive busy as (
      -- Claimed less than attemptMs ago (claimed_until is the claim's time plus its lease).
      select endpoint_id, project_id, count(*)::int as n from webhook_deliveries
      where claimed_until is not null and claimed_until > now() + ${options.leaseMs - options.attemptMs}::int * interval '1 millisecond'
        and id <> all(string_to_array(${(options.ended ?? []).join(',')}::text, ','))
      group by endpoint_id, project_id
    ), project_busy as (
      select project_id, sum(n)::int as n from busy group by project_id
    ), waiting (endpoint_id) as (
      -- Every endpoint with a pending delivery that is not parked, one probe of the endpoint due
      -- index each (a loose index scan), however many deliveries each has.
      (select endpoint_id from webhook_deliveries
        where status = 'pending' and next_attempt_at is not null
        order by endpoint_id limit 1)
      union all
      select (select d.endpoint_id from webhook_deliveries d
          where d.status = 'pending' and d.next_attempt_at is not null and d.endpoint_id > w.endpoint_id
          order by d.endpoint_id limit 1)
      from waiting w
      where w.endpoint_id is not null
    ), ready as (
      -- Those with room: enabled, under their limit, and under their project's or idle (an
      -- endpoint with nothing in flight may always have one attempt, so that one of the
      -- project's endpoints that hangs cannot hold up the others).
      select e.id, e.project_id, coalesce(b.n, 0) as endpoint_busy, coalesce(p.n, 0) as project_busy, l.endpoint_limit
      from waiting w
      join webhook_endpoints e on e.id = w.endpoint_id
      cross join lateral (
        select case when e.failing_since is null then ${options.perEndpoint}::int else ${options.perFailingEndpoint}::int end as endpoint_limit
      ) l
      left join busy b on b.endpoint_id = e.id
      left join project_busy p on p.project_id = e.project_id
      where e.enabled and coalesce(b.n, 0) < l.endpoint_limit and (coalesce(p.n, 0) < ${options.perProject}::int or b.n is null)
    ), endpoint_place as (
      -- Each one's soonest due deliveries, as many as it has room for.
      select r.project_id, r.project_busy, d.id, d.next_attempt_at,
        r.endpoint_busy + row_number() over (partition by r.id order by d.next_attempt_at, d.id) as place
      from ready r
      cross join lateral (
        select d.id, d.next_attempt_at from webhook_deliveries d
        where d.endpoint_id = r.id and d.status = 'pending' and d.next_attempt_at <= now()
          and (d.claimed_until is null or d.claimed_until <= now()) and ${projectSends}
          -- An event gone from the log (pruned or not yet) is sent no more: its time is its delivery's.
          and ${inEventWindow(sql.raw('d.created_at'))}
        order by d.next_attempt_at
        limit greatest(least(r.endpoint_limit - r.endpoint_busy, ${options.perProject}::int - r.project_busy), case when r.endpoint_busy = 0 then 1 else 0 end)
      ) d
    ), project_place as (
      -- A project's room goes to its endpoints' first places first.
      select id, next_attempt_at, place,
        project_busy + row_number() over (partition by project_id order by place, next_attempt_at, id) as project_place
      from endpoint_place
    ), candidate as (
      -- Within the project's room, and the first place of an idle endpoint whatever the room.
      select id from project_place
      where project_place <= ${options.perProject}::int or place = 1
      order by place, next_attempt_at, id
      limit ${options.limit}
    ), locked as (
      select d.id from webhook_deliveries d
      where d.id = any(array(select id from candidate))
        and d.status = 'pending' and d.next_attempt_at <= now()
        and (d.claimed_until is null or d.claimed_until <= now())
      for no key update skip locked
    ), claimed as (
      update webhook_deliveries d
      set claimed_until = now() + ${options.leaseMs}::int * interval '1 millisecond', claim_token = ${token}
      from locked, webhook_endpoints e, events ev
      where d.id = locked.id and e.id = d.endpoint_id and ev.id = d.event_id and e.enabled and ${projectSends}
      returning d.id, d.endpoint_id, d.attempts,
        (extract(epoch from d.created_at) * 1000)::float8 as created_ms,
        (extract(epoch from d.next_attempt_at) * 1000)::float8 as due_ms,
        (extract(epoch from now()) * 1000)::float8 as claimed_ms,
        e.url, e.secret,
        case when e.previous_secret_expires_at > now() then e.previous_secret end as previous_secret,
        ev.id as event_id, ev.type as event_type, ev.data as event_data,
        (extract(epoch from ev.created_at) * 1000)::float8 as event_created_ms
    )
    select claimed.*, (select count(*)::int from candidate) as candidates from claimed`
}

/**
 * Parks the pending deliveries of these endpoints while they are disabled: next_attempt_at null,
 * out of the range of the due index, so that no claim reads past them (they stay `pending`: a
 * disabled endpoint's deliveries wait for it to be enabled, api-contract §10). The endpoints are
 * locked (FOR SHARE) and must still be disabled: enabling one (an UPDATE, which unparks them
 * in its transaction, unparkDeliveries) waits for this statement, or this statement waits for
 * it and then finds it enabled; each endpoint is locked before it is read, so that a PATCH
 * disabling it, not yet committed, is waited for and then seen. Deliveries an attempt is holding
 * are left to that attempt's record, whose dispatcher parks them after it (Recorded.toPark): by
 * its lease, or, for an attempt that outlived its lease and is being recorded right now, by its
 * row's lock (SKIP LOCKED). A record locks the delivery, then its endpoint; a PATCH disabling
 * the endpoint holds the endpoint when it parks: waiting here for the delivery would deadlock
 * with that record. Returns how many it parked.
 */
export async function parkDeliveries(db: Database, endpointIds: readonly string[]): Promise<number> {
  if (endpointIds.length === 0) return 0
  const rows = rowsOf(
    await db.execute(sql`
      with endpoint as (
        select id, enabled from webhook_endpoints where id in (${sql.join(endpointIds.map((id) => sql`${id}`), sql`, `)})
        order by id
        for share
      ), waiting as (
        select id from endpoint where not enabled
      ), parked as (
        select d.id from webhook_deliveries d join waiting w on w.id = d.endpoint_id
        where d.status = 'pending' and d.next_attempt_at is not null
          and (d.claimed_until is null or d.claimed_until <= now())
        for no key update of d skip locked
      )
      update webhook_deliveries d set next_attempt_at = null
      from parked p
      where d.id = p.id
      returning d.id`),
  )
  return rows.length
}

/**
 * Makes the parked deliveries of an endpoint just enabled due now (in the transaction that
 * enabled it, which holds its row). Returns how many.
 */
export async function unparkDeliveries(db: Database, endpointId: string): Promise<number> {
  const rows = rowsOf(
    await db.execute(sql`
      update webhook_deliveries set next_attempt_at = date_trunc('milliseconds', now())
      where endpoint_id = ${endpointId} and status = 'pending' and next_attempt_at is null
      returning id`),
  )
  return rows.length
}

export function dispatchRepo(db: Database) {
  return {
    /**
     * Claims due deliveries: pending, due now, unclaimed (or their claim's lease has run out), to
     * an enabled endpoint, of an event the project may be sent (projectSends). Attempts in
     * flight (claims younger than `attemptMs`, on every instance) are limited per endpoint
     * (`perEndpoint`, `perFailingEndpoint` while it is failing) and per project (`perProject`),
     * so that a few endpoints that hang, or a tenant with many, hold a few of the slots and never
     * all of them. An endpoint with nothing in flight may have one attempt whatever its project
     * holds: one endpoint that hangs (8 attempts of 10 s before it counts as failing) would
     * otherwise hold its project's every slot, and its healthy siblings' events past the
     * contract's 2 s. A project then holds at most perProject plus one per endpoint (ten). Rows that another instance is claiming or recording at this moment are
     * skipped, never waited for (FOR NO KEY UPDATE SKIP LOCKED: the lock the claim's UPDATE
     * takes anyway).
     *
     * The candidates come first, unlocked (a window function cannot be locked), endpoint by
     * endpoint: the endpoints with pending deliveries, from the endpoint due index, and of each
     * that has room its soonest due deliveries, as many as its room. So a claim costs a few index
     * probes per endpoint with pending deliveries, whatever their backlogs, and an endpoint's
     * backlog, full or not, never hides another endpoint's deliveries. They are taken by their
     * place in their endpoint's queue, counting its attempts in flight, before their due time:
     * every endpoint's first delivery, then every endpoint's second, so that one endpoint's
     * backlog cannot fill the batch while another waits for its first. Each candidate is then
     * locked and its conditions checked again, on the row as it is now.
     */
    async claim(options: ClaimOptions): Promise<Claim> {
      if (options.limit <= 0) return { deliveries: [], more: false }
      const token = randomUUID()
      const rows = rowsOf<Record<string, unknown>>(await db.execute(claimQuery(options, token)))
      const deliveries = rows.map((row) => ({
        id: row.id as string,
        token,
        endpointId: row.endpoint_id as string,
        url: row.url as string,
        secrets: [row.secret as string, ...(row.previous_secret ? [row.previous_secret as string] : [])],
        eventId: row.event_id as string,
        body: eventJson({ id: row.event_id as string, type: row.event_type as string, data: row.event_data as string, created_at: ms(row.event_created_ms) }),
        attempts: Number(row.attempts),
        createdAt: ms(row.created_ms),
        claimedAt: ms(row.claimed_ms),
        dueAt: ms(row.due_ms),
      }))
      return { deliveries, more: deliveries.length > 0 && Number(rows[0]!.candidates) > deliveries.length }
    },

    /**
     * Records outcomes, in one statement however many. A delivery is updated only while the
     * outcome's claim is still its claim. Per endpoint: a success clears failing_since; a
     * failure after the endpoint's latest success sets it (to when that attempt began); a
     * failure when it is 5 days old disables the endpoint (`failing`), and a 410 disables it
     * (`gone`); an endpoint the team disabled keeps its null reason. Endpoints are locked in id
     * order, so that instances recording at once never deadlock on them.
     *
     * A retry asked for while the attempt was in flight (POST .../retry set next_attempt_at,
     * which nothing else changes while a claim holds the delivery) is kept: the attempt is
     * counted, and the delivery stays pending and due when the retry asked, whatever the attempt
     * came to, since it began before the retry was asked for and is not the attempt the retry's
     * 202 promised (the endpoint answering 410 excepted: a disabled endpoint is sent nothing).
     */
    async record(outcomes: readonly Outcome[]): Promise<Recorded> {
      if (outcomes.length === 0) return { deliveries: [], disabled: [], toPark: [] }
      const input = JSON.stringify(
        outcomes.map((o) => ({
          id: o.id,
          token: o.token,
          started_at: o.startedAt.toISOString(),
          due_at: o.dueAt.toISOString(),
          status: o.status,
          error: o.error,
          ok: o.succeeded,
          gone: o.gone,
          retry_ms: o.succeeded || o.gone ? null : o.retryInMs,
        })),
      )
      // In the SET, d is the row as it was: its next attempt is no longer the one claimed.
      const retried = sql`(not o.gone and d.next_attempt_at <> o.due_at)`
      const rows = rowsOf<{ kind: 'delivery' | 'endpoint' | 'pending'; id: string; value: string }>(
        await db.execute(sql`
          with outcome as (
            select * from json_to_recordset(${input}::json)
              as o(id text, token text, started_at timestamptz, due_at timestamptz, status int, error text, ok boolean, gone boolean, retry_ms bigint)
          ), delivery as (
            update webhook_deliveries d
            set attempts = d.attempts + 1,
              last_attempt_at = o.started_at,
              last_response_status = o.status,
              last_error = o.error,
              status = case when ${retried} then 'pending' when o.ok then 'succeeded' when o.retry_ms is null then 'failed' else 'pending' end,
              -- A delivery parked while its attempt was in flight (parkDeliveries) stays parked.
              next_attempt_at = case
                when ${retried} then d.next_attempt_at
                when o.retry_ms is not null and d.next_attempt_at is not null then now() + o.retry_ms * interval '1 millisecond'
              end,
              claimed_until = null,
              claim_token = null
            from outcome o
            where d.id = o.id and d.claim_token = o.token
            returning d.id, d.endpoint_id, d.status, o.ok, o.gone, o.started_at
          ), summary as (
            select endpoint_id, bool_or(gone) as gone, max(started_at) filter (where ok) as succeeded_at
            from delivery group by endpoint_id
          ), effect as (
            select s.endpoint_id, s.gone, s.succeeded_at,
              (select min(f.started_at) from delivery f
                where f.endpoint_id = s.endpoint_id and not f.ok and (s.succeeded_at is null or f.started_at > s.succeeded_at)) as failed_from
            from summary s
          ), target as (
            -- The lock reads each row as it is once locked, even if another instance changed it
            -- meanwhile; NO KEY, so that an event written for the endpoint meanwhile (the KEY
            -- SHARE lock its deliveries' insert takes, outbox.ts) does not wait.
            select e.id, e.enabled, e.failing_since from webhook_endpoints e join effect x on x.endpoint_id = e.id
            where (x.gone and e.enabled)
              or (x.succeeded_at is not null and (e.failing_since is not null or x.failed_from is not null))
              or (x.succeeded_at is null and x.failed_from is not null
                and (e.failing_since is null or (e.enabled and e.failing_since <= now() - ${FAILING_DISABLES_AFTER})))
            order by e.id
            for no key update of e
          ), next as (
            select t.id, t.enabled, x.gone and t.enabled as gone, x.failed_from,
              case when x.succeeded_at is not null then x.failed_from else coalesce(t.failing_since, x.failed_from) end as failing_since
            from target t join effect x on x.endpoint_id = t.id
          ), decided as (
            select id, gone, failing_since,
              coalesce(not gone and enabled and failed_from is not null and failing_since <= now() - ${FAILING_DISABLES_AFTER}, false) as failing
            from next
          ), endpoint as (
            update webhook_endpoints e
            set failing_since = n.failing_since,
              enabled = e.enabled and not n.gone and not n.failing,
              disabled_reason = case when n.gone then 'gone' when n.failing then 'failing' else e.disabled_reason end,
              updated_at = case when n.gone or n.failing then now() else e.updated_at end
            from decided n
            where e.id = n.id
            returning e.id, e.disabled_reason, n.gone or n.failing as disabled
          )
          select 'delivery' as kind, id, status as value from delivery
          union all
          select 'endpoint', id, disabled_reason from endpoint where disabled
          union all
          select distinct 'pending', endpoint_id, null from delivery where status = 'pending'`),
      )
      const disabled = rows.filter((r) => r.kind === 'endpoint').map((r) => ({ id: r.id, reason: r.value as 'gone' | 'failing' }))
      return {
        deliveries: rows.filter((r) => r.kind === 'delivery').map((r) => ({ id: r.id, status: r.value as Recorded['deliveries'][number]['status'] })),
        disabled,
        toPark: [...new Set([...disabled.map((e) => e.id), ...rows.filter((r) => r.kind === 'pending').map((r) => r.id)])],
      }
    },

    /**
     * Refreshes the planner's statistics of the deliveries. PGlite runs no autovacuum, so
     * without this the claim is planned for a table as small as when it was created (a claim
     * over a backlog of 30 000 took 24 ms, against 8 ms once analyzed; measured on PGlite).
     * Samples at most 30 000 rows whatever the table's size. PostgreSQL's autovacuum does this
     * by itself.
     */
    async analyze(): Promise<void> {
      await db.execute(sql`analyze webhook_deliveries`)
    },

    /** Whether PostgreSQL's autovacuum is on, keeping these statistics itself (analyze). */
    async autovacuumOn(): Promise<boolean> {
      const [row] = rowsOf<{ on: boolean }>(await db.execute(sql`select current_setting('autovacuum') = 'on' as on`))
      return row?.on !== false
    },

    /** parkDeliveries, after a record (Recorded.toPark). */
    park: (endpointIds: readonly string[]) => parkDeliveries(db, endpointIds),

    /** Lets claims go without an attempt recorded (a shutdown): due again at once, for any instance. */
    async release(claims: readonly { id: string; token: string }[]): Promise<void> {
      if (claims.length === 0) return
      await db.execute(sql`
        update webhook_deliveries d set claimed_until = null, claim_token = null
        from json_to_recordset(${JSON.stringify(claims)}::json) as c(id text, token text)
        where d.id = c.id and d.claim_token = c.token`)
    },
  }
}

