// Serialises migrations of several instances starting at once against one PostgreSQL database.
// The lock is a transaction's (pg_advisory_xact_lock), held by a connection of its own while a
// second one migrates: behind PgBouncer in transaction mode, a session's lock would stay with
// whichever server connection took it, after this process had gone, and the next start would
// wait for it forever. A transaction keeps its server connection until it ends, and its lock
// ends with it, whether it commits or its connection drops.
import postgres, { type Sql } from 'postgres'

const MIGRATION_LOCK = 0x46425f4d // "FB_M"

export interface MigrationClientOptions {
  connectTimeout: number
  /** postgres.js's `prepare` (DB_PREPARE). */
  prepare: boolean
}

/** Runs `migrate` on a client of its own while no other instance migrates this database. */
export async function withMigrationLock(url: string, options: MigrationClientOptions, migrate: (client: Sql) => Promise<void>): Promise<void> {
  const settings = { max: 1, connect_timeout: options.connectTimeout, prepare: options.prepare, onnotice: () => {} }
  const lock = postgres(url, settings)
  const client = postgres(url, settings)
  try {
    await lock.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await migrate(client)
    })
  } finally {
    await Promise.all([lock.end({ timeout: 5 }), client.end({ timeout: 5 })])
  }
}
