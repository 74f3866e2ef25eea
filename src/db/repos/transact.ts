import type { Database } from '../client.js'
import { someCause } from '../results.js'

/**
 * Runs `work` in a transaction: the one the repositories are bound to (repos.transaction), or a
 * new one. A repository whose write takes several statements runs them so; a caller that adds
 * the write's event (outbox.record) runs both in repos.transaction, with no savepoint between.
 */
export type Transact = <T>(work: (tx: Database) => Promise<T>) => Promise<T>

/**
 * PostgreSQL's "cached plan must not change result type": a statement this connection prepared
 * reads a table whose columns have changed type since, as a migration run by a newer instance
 * during a rolling deploy does (0020 changed the ids' collation). postgres.js prepares such a
 * statement again and retries it by itself outside a transaction; inside one, the transaction
 * is already aborted, and the request answered 500 (found by a rolling-migration check).
 */
const isStalePlan = (error: unknown): boolean => someCause(error, (e) => e.code === '0A000' && (e as { routine?: unknown }).routine === 'RevalidateCachedQuery')

/**
 * How many times a transaction runs while its statements' plans are found stale: each run finds
 * one (the first fails the transaction), and postgres.js prepares that one anew next time on
 * that connection, but every connection of the pool holds its own copy, and a run may take any
 * of them: a transaction of n statements may meet up to pool size × n stale copies (a review saw
 * a signup fail after 16 runs with the default pool of 10). Each failed run costs one statement.
 */
export const STALE_PLAN_RUNS = 100

/**
 * `db.transaction(work)`, run again while it fails on a stale plan: nothing of a failed run was
 * committed, and postgres.js has dropped the stale statement, so the next run prepares it anew.
 * Once was not enough: a webhook endpoint's creation reads the project, then inserts, and both
 * went stale in one migration (found by a review). Every transaction of the repositories begins here.
 */
export async function transaction<T>(db: Database, work: (tx: Database) => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await db.transaction((tx) => work(tx as unknown as Database))
    } catch (error) {
      if (!isStalePlan(error) || run >= STALE_PLAN_RUNS) throw error
    }
  }
}

/** A transaction of its own on `db` for each call. */
export const newTransaction =
  (db: Database): Transact =>
  (work) =>
    transaction(db, work)
