import { and, eq, lt, sql } from 'drizzle-orm'
import type { Database } from '../client.js'
import { idempotency_keys } from '../schema.js'

export type IdempotencyRecord = typeof idempotency_keys.$inferSelect

/** How long a 2xx answer is replayed, and how long a claim may stay unfinished before a retry takes it over. */
const KEEP = sql`interval '24 hours'`
const ABANDONED = sql`interval '60 seconds'`

export function idempotencyRepo(db: Database) {
  return {
    /**
     * Claims `key` for a request, atomically: true when this request owns it now (new, expired,
     * or abandoned by a request that never finished), otherwise the record that holds it.
     */
    async claim(scope: string, key: string, requestHash: string): Promise<true | IdempotencyRecord | undefined> {
      const claimed = await db
        .insert(idempotency_keys)
        .values({ scope, key, request_hash: requestHash })
        .onConflictDoUpdate({
          target: [idempotency_keys.scope, idempotency_keys.key],
          set: { request_hash: requestHash, state: 'in_progress', response_status: null, response_location: null, response_body: null, created_at: sql`now()` },
          setWhere: sql`${idempotency_keys.created_at} < now() - ${KEEP} or (${idempotency_keys.state} = 'in_progress' and ${idempotency_keys.created_at} < now() - ${ABANDONED})`,
        })
        .returning({ key: idempotency_keys.key })
      if (claimed.length) return true
      const [record] = await db
        .select()
        .from(idempotency_keys)
        .where(and(eq(idempotency_keys.scope, scope), eq(idempotency_keys.key, key)))
      return record
    },

    async complete(scope: string, key: string, response: { status: number; location: string | undefined; body: string }): Promise<void> {
      await db
        .update(idempotency_keys)
        .set({ state: 'done', response_status: response.status, response_location: response.location ?? null, response_body: response.body })
        .where(and(eq(idempotency_keys.scope, scope), eq(idempotency_keys.key, key)))
    },

    /** Frees a claim whose request failed, so that a retry runs it again. */
    async release(scope: string, key: string): Promise<void> {
      await db
        .delete(idempotency_keys)
        .where(and(eq(idempotency_keys.scope, scope), eq(idempotency_keys.key, key), eq(idempotency_keys.state, 'in_progress')))
    },

    /** Deletes records past their 24 hours. */
    async purgeExpired(): Promise<void> {
      await db.delete(idempotency_keys).where(lt(idempotency_keys.created_at, sql`now() - ${KEEP}`))
    },
  }
}
