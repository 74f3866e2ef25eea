import { and, eq, getTableColumns, lt, sql } from 'drizzle-orm'
import type { Database } from '../client.js'
import { rowsOf } from '../results.js'
import { idempotency_keys } from '../schema.js'

export type IdempotencyRecord = typeof idempotency_keys.$inferSelect

/** A request's hashes (http/idempotency.ts, requestHashes); stored with its key, the value's bound to the other. */
export interface RequestHashes {
  sent: string
  value: string
}

/** How long a 2xx answer is replayed. */
const KEEP = sql`interval '24 hours'`
/** A claim left `in_progress` by a version that claimed keys before writing: how long it still blocks a retry. */
const ABANDONED = sql`interval '60 seconds'`
/**
 * How long before its 24 hours end an answer is still replayed while another request holds the
 * key: a transaction begun after the end takes the record for expired and replaces it, while
 * one begun just before still reads it as kept (now() is each transaction's start).
 */
const EXPIRY_MARGIN = sql`interval '60 seconds'`

/** What `hold` finds under the key: nothing (the request runs), a stored answer, or a request still running. */
export type Held = { state: 'free' } | { state: 'done'; record: IdempotencyRecord } | { state: 'running'; record?: IdempotencyRecord }

export function idempotencyRepo(db: Database) {
  /** The key's record, while it is kept (24 hours). */
  const keptRecord = (scope: string, key: string) =>
    and(eq(idempotency_keys.scope, scope), eq(idempotency_keys.key, key), sql`${idempotency_keys.created_at} >= now() - ${KEEP}`)

  return {
    /**
     * Takes the key for the rest of the transaction this runs in (repos.transaction), and says
     * what is under it: the write the request makes and the answer stored under the key commit
     * together or not at all. So an answer lost after the commit (a 503 for a write that was
     * applied) is replayed to the retry, and a request that failed leaves nothing behind. A
     * transaction-scoped advisory lock tells a request still running (`running`) without
     * waiting for it. A stored answer is replayed whether or not the lock is free, the lock
     * being perhaps another replay's (retries sent together were told 409 while nothing ran;
     * found by a review behind a load balancer): a kept answer changes only once its 24 hours
     * are over, so without the lock it is replayed only while they are more than
     * EXPIRY_MARGIN from over (found by a review of that change).
     */
    async hold(scope: string, key: string): Promise<Held> {
      const [lock] = rowsOf<{ locked: boolean }>(await db.execute(sql`select pg_try_advisory_xact_lock(hashtextextended(${scope} || ' ' || ${key}, 0)) as locked`))
      const [found] = await db
        .select({
          record: getTableColumns(idempotency_keys),
          recent: sql<boolean>`${idempotency_keys.created_at} >= now() - ${ABANDONED}`,
          settled: sql<boolean>`${idempotency_keys.created_at} >= now() - ${KEEP} + ${EXPIRY_MARGIN}`,
        })
        .from(idempotency_keys)
        .where(keptRecord(scope, key))
      if (found?.record.state === 'done' && (lock?.locked || found.settled)) return { state: 'done', record: found.record }
      if (!lock?.locked) return { state: 'running' }
      return found?.recent ? { state: 'running', record: found.record } : { state: 'free' }
    },

    /** Whether the key holds an answer to replay (outside any transaction: a hint, which hold() settles). */
    async answered(scope: string, key: string): Promise<boolean> {
      const [found] = await db
        .select({ state: idempotency_keys.state })
        .from(idempotency_keys)
        .where(and(keptRecord(scope, key), eq(idempotency_keys.state, 'done')))
      return found !== undefined
    },

    /** Stores the answer under the key, inside hold's transaction (replacing an expired or abandoned record). */
    async save(scope: string, key: string, hashes: RequestHashes, response: { status: number; location: string | undefined; body: string }): Promise<void> {
      const values = { request_hash: hashes.sent, request_value_hash: hashes.value, state: 'done' as const, response_status: response.status, response_location: response.location ?? null, response_body: response.body, created_at: sql`now()` }
      await db
        .insert(idempotency_keys)
        .values({ scope, key, ...values })
        .onConflictDoUpdate({ target: [idempotency_keys.scope, idempotency_keys.key], set: values })
    },

    /**
     * Marks the key as taken by a request running elsewhere, as versions that claimed a key
     * before writing did: retries answer 409 for ABANDONED. Kept for a rolling deploy beside
     * such a version, and for the Prism scenario's 409. True when the key was free.
     */
    async claim(scope: string, key: string, requestHash: string): Promise<true | undefined> {
      const claimed = await db.insert(idempotency_keys).values({ scope, key, request_hash: requestHash }).onConflictDoNothing().returning({ key: idempotency_keys.key })
      return claimed.length ? true : undefined
    },

    /**
     * Deletes up to `limit` records past their 24 hours, the oldest first, but those another
     * transaction holds (SKIP LOCKED): a request that reuses a key after its 24 hours holds its
     * expired record, and instances pruning at once hold each other's. Returns how many. Run by
     * the pruning job (jobs/event-pruning.ts), in batches: in a request's transaction, as it was,
     * one unbounded delete made a random write as slow as the day's keys were many.
     */
    async purgeExpired(limit: number): Promise<number> {
      const expired = db
        .select({ scope: idempotency_keys.scope, key: idempotency_keys.key })
        .from(idempotency_keys)
        .where(lt(idempotency_keys.created_at, sql`now() - ${KEEP}`))
        .orderBy(idempotency_keys.created_at)
        .limit(limit)
        .for('update', { skipLocked: true })
      const deleted = await db
        .delete(idempotency_keys)
        .where(sql`(${idempotency_keys.scope}, ${idempotency_keys.key}) in (${expired})`)
        .returning({ key: idempotency_keys.key })
      return deleted.length
    },
  }
}

