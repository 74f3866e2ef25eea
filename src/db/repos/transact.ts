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
 * `db.transaction(work)`, run once more if it failed on a stale plan: nothing of the first run
 * was committed, and postgres.js has dropped the stale statement, so the second prepares it anew.
 * Every transaction of the repositories begins here.
 */
export async function transaction<T>(db: Database, work: (tx: Database) => Promise<T>): Promise<T> {
  const run = () => db.transaction((tx) => work(tx as unknown as Database))
  try {
    return await run()
  } catch (error) {
    if (!isStalePlan(error)) throw error
    return run()
  }
}

/** A transaction of its own on `db` for each call. */
export const newTransaction =
  (db: Database): Transact =>
  (work) =>
    transaction(db, work)
