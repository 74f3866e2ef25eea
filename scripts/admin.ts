// npm run admin -- <command>: see src/cli/admin.ts for the commands.
import { describeError, runAdminCommand } from '../src/cli/admin.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'

const config = loadConfig()
const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.databaseUrl ? undefined : config.dataDir })
try {
  await database.migrate()
  const result = await runAdminCommand(process.argv.slice(2), config, database)
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
} catch (error) {
  process.stderr.write(`${describeError(error)}\n`)
  process.exitCode = 1
} finally {
  await database.close()
}
