// npm run db:migrate: applies drizzle/ to the configured database (DATABASE_URL, or the
// embedded one under DATA_DIR) and exits. The server also migrates on start.
import { loadConfig, SetupError } from '../src/config.js'
import { openConfiguredDatabase } from '../src/db/client.js'

try {
  const database = await openConfiguredDatabase(loadConfig(), 'npm run db:migrate')
  console.log(`migrated ${database.description}`)
  await database.close()
} catch (error) {
  if (!(error instanceof SetupError)) throw error
  process.stderr.write(`Cannot migrate: ${error.message}\n`)
  process.exitCode = 1
}
