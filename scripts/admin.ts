// npm run admin -- <command>: see src/cli/admin.ts for the commands. Says on stderr which
// database it acts on (stdout is the command's JSON, for scripts).
import { describeError, runAdminCommand } from '../src/cli/admin.js'
import { loadConfig } from '../src/config.js'
import { openDatabase, type DbHandle } from '../src/db/client.js'

let database: DbHandle | undefined
try {
  const config = loadConfig()
  database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.databaseUrl ? undefined : config.dataDir, role: 'the admin CLI', prepare: config.dbPrepare })
  process.stderr.write(`Using ${database.description}.\n`)
  await database.migrate()
  const result = await runAdminCommand(process.argv.slice(2), config, database)
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
} catch (error) {
  process.stderr.write(`${describeError(error)}\n`)
  process.exitCode = 1
} finally {
  await database?.close()
}
