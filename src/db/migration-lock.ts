// Serialises migrations of several instances starting at once against one PostgreSQL database.
// The lock is a transaction's (pg_advisory_xact_lock), held by a connection of its own while a
// second one migrates: behind PgBouncer in transaction mode, a session's lock would stay with
// whichever server connection took it, after this process had gone, and the next start would
// wait for it forever. A transaction keeps its server connection until it ends, and its lock
// ends with it, whether it commits or its connection drops.
import { setTimeout as sleep } from 'node:timers/promises'
import postgres, { type Sql } from 'postgres'
import { sqlState } from './results.js'
import type { ConnectionTarget } from './target.js'

const MIGRATION_LOCK = 0x46425f4d // "FB_M"

export interface MigrationClientOptions {
  connectTimeout: number
  /** postgres.js's `prepare` (DB_PREPARE). */
  prepare: boolean
}

/** Runs `migrate` on a client of its own while no other instance migrates this database. */
export async function withMigrationLock(target: ConnectionTarget, options: MigrationClientOptions, migrate: (client: Sql) => Promise<void>): Promise<void> {
  const settings = { max: 1, connect_timeout: options.connectTimeout, prepare: options.prepare, onnotice: () => {}, ...(target.options as object) }
  const lock = postgres(target.url, settings)
  const client = postgres(target.url, settings)
  try {
    await lock.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await migrate(client)
    })
  } finally {
    await Promise.all([lock.end({ timeout: 5 }), client.end({ timeout: 5 })])
  }
}

/** How many times the migrations run while they deadlock with the requests of instances still serving. */
export const MIGRATION_RUNS = 8
/** The pause before the second run; each later one waits as much more. */
const DEADLOCK_PAUSE_MS = 500

/**
 * Runs `migrate` again while it fails on a deadlock (40P01), at most MIGRATION_RUNS times. The
 * pending migrations run in one transaction, which takes each table it changes for itself until
 * it commits; a request of an instance still serving that holds one of those tables and waits
 * for another the migration holds is a deadlock, and PostgreSQL ends one of the two. When it ends
 * the migration, nothing of it was committed: a new start failed on it every time under a light
 * load of an older instance (found by a review of a rolling upgrade across migration 0020).
 */
export async function runningAgainOnDeadlock(
  migrate: () => Promise<void>,
  pause: (ms: number) => Promise<unknown> = sleep,
  report: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<void> {
  for (let run = 1; ; run++) {
    try {
      return await migrate()
    } catch (error) {
      if (sqlState(error) !== '40P01' || run >= MIGRATION_RUNS) throw error
      // A line of its own, like the start's other problems (the server's log is not open yet).
      report(`Migrations: PostgreSQL ended them in a deadlock with requests of running instances (40P01); running them again in ${(DEADLOCK_PAUSE_MS * run) / 1000} s (run ${run + 1} of ${MIGRATION_RUNS}).`)
      await pause(DEADLOCK_PAUSE_MS * run)
    }
  }
}
