// One database per test process (tap runs each file in its own process): in-memory PGlite by
// default, or PostgreSQL when DATABASE_URL is set. Tests never truncate or share rows: each
// makes its own project.
import { sql, type SQLWrapper } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { openDatabase, type DbHandle } from '../../src/db/client.js'

let shared: Promise<DbHandle> | undefined

export function testDatabase(): Promise<DbHandle> {
  if (!shared) {
    shared = (async () => {
      const handle = await openDatabase({ databaseUrl: process.env.DATABASE_URL || undefined, poolSize: 10 })
      await handle.migrate()
      return handle
    })()
    // PGlite keeps the process alive until it is closed.
    t.teardown(async () => (await shared!).close())
  }
  return shared
}

/**
 * A PostgreSQL URL for the tests that need PostgreSQL itself (outages, shutdown under load,
 * statement timeouts), in both passes: DATABASE_URL when set, else a local feedback_test
 * database, created on first use so that `npm test` works on a fresh machine with a local
 * PostgreSQL. Fails, never skips, when PostgreSQL is unreachable.
 */
export async function postgresTestUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL
  const url = 'postgres://postgres@127.0.0.1:5432/feedback_test'
  const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    const [found] = await admin`select 1 from pg_database where datname = 'feedback_test'`
    if (!found) await admin`create database feedback_test`.catch((error: { code?: string }) => {
      // Another test file created it at the same moment.
      if (error.code !== '42P04' && error.code !== '23505') throw error
    })
  } finally {
    await admin.end({ timeout: 5 })
  }
  return url
}

/**
 * The plan PostgreSQL chooses for a query, as text. The test tables are tiny, so sequential and
 * bitmap scans are turned off: otherwise they would be cheaper and prove nothing about the index.
 */
export async function explainPlan(query: SQLWrapper): Promise<string> {
  const { db } = await testDatabase()
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local enable_seqscan = off`)
    await tx.execute(sql`set local enable_bitmapscan = off`)
    const result = await tx.execute(sql`explain ${query}`)
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, string>[]
    return rows.map((row) => Object.values(row)[0]).join('\n')
  })
}
