// Entry point: read the configuration, open and migrate the database, build the app, listen,
// and drain on SIGTERM/SIGINT (stop accepting, finish in-flight requests, close the pool).
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { loadConfig } from './config.js'
import { openDatabase } from './db/client.js'
import { makeRepos } from './db/repos/index.js'

const config = loadConfig()
const database = await openDatabase({
  databaseUrl: config.databaseUrl,
  dataDir: config.databaseUrl ? undefined : config.dataDir,
  poolSize: config.dbPoolSize,
  connectTimeout: config.dbConnectTimeout,
  statementTimeoutMs: config.dbStatementTimeoutMs,
})
await database.migrate()
const app = await buildApp(config, database)

// A newcomer on an empty embedded database gets a project to call straight away. The key is
// printed once, to the terminal, and never logged.
const projects = makeRepos(database.db).projects
if (database.kind === 'pglite' && (await projects.count()) === 0) {
  const { project, apiKey } = await projects.create({ name: 'Demo project', plan: 'pro', beta_enabled: true })
  process.stdout.write(
    `\nCreated a demo project on the empty embedded database (Pro plan, beta enabled).\n` +
      `  project: ${project.id}\n  API key: ${apiKey}\n` +
      `This key is shown once. Try: curl -H "Authorization: Bearer ${apiKey}" http://${config.host}:${config.port}/v1/changelog\n\n`,
  )
}

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) app.log.error({ err }, 'shutting down after an error')
  else app.log.info({ signal }, 'shutting down')
  await app.close()
  await database.close()
})

await app.listen({ port: config.port, host: config.host })
