import type { Database } from '../client.js'

/**
 * Runs `work` in a transaction: the one the repositories are bound to (repos.transaction), or a
 * new one. A repository whose write takes several statements runs them so; a caller that adds
 * the write's event (outbox.record) runs both in repos.transaction, with no savepoint between.
 */
export type Transact = <T>(work: (tx: Database) => Promise<T>) => Promise<T>

/** A transaction of its own on `db` for each call. */
export const newTransaction =
  (db: Database): Transact =>
  (work) =>
    db.transaction((tx) => work(tx as unknown as Database))
