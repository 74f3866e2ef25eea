// npm run db:migrate: applies drizzle/ to the configured database (DATABASE_URL, or the
// embedded one under DATA_DIR) and exits. The server also migrates on start.
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'

const config = loadConfig()
const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.databaseUrl ? undefined : config.dataDir, prepare: config.dbPrepare })
try {
  await database.migrate()
  console.log(`migrated the ${database.kind} database`)
} finally {
  await database.close()
}
