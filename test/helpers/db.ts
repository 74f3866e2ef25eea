// One database per test process (tap runs each file in its own process): in-memory PGlite by
// default, or PostgreSQL when DATABASE_URL is set. Tests never truncate or share rows: each
// makes its own project.
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
