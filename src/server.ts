// Entry point: read the configuration, open and migrate the database, build the app, listen,
// and drain on SIGTERM/SIGINT (stop accepting, finish in-flight requests, close the pool).
// Nothing a user sees is created before the port is bound: a start that cannot listen leaves
// no demo project behind whose key nobody saw. What the operator must fix (a bad setting, a
// busy port, a data directory another process holds) is one line on stderr and exit code 1.
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { loadConfig, SetupError, type Config } from './config.js'
import { openDatabase, type DbHandle } from './db/client.js'
import { makeRepos } from './db/repos/index.js'

/** The message for an error the operator can act on; undefined for anything else (a bug: stack). */
function setupProblem(error: unknown, config: Config | undefined): string | undefined {
  if (error instanceof SetupError) return error.message
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (config && code === 'EADDRINUSE') {
    return `Port ${config.port} on ${config.host} is already in use by another process: stop it, or set PORT to a free port.`
  }
  if (config && (code === 'EACCES' || code === 'EADDRNOTAVAIL')) {
    return `Cannot listen on ${config.host}:${config.port} (${code}): set HOST to an address of this machine and PORT to a port this user may bind (1024 or above).`
  }
  return undefined
}

/** A newcomer on an empty embedded database gets a project to call straight away; the key is printed once, never logged. */
async function createDemoProject(config: Config, database: DbHandle): Promise<void> {
  const projects = makeRepos(database.db).projects
  if (database.kind !== 'pglite' || (await projects.count()) > 0) return
  const { project, apiKey } = await projects.create({ name: 'Demo project', plan: 'pro', beta_enabled: true })
  process.stdout.write(
    `\nCreated a demo project on the empty embedded database (Pro plan, beta enabled).\n` +
      `  project: ${project.id}\n  API key: ${apiKey}\n` +
      `This key is shown once. Try: curl -H "Authorization: Bearer ${apiKey}" http://${config.host}:${config.port}/v1/changelog\n\n`,
  )
}

let config: Config | undefined
let database: DbHandle | undefined
let app: FastifyInstance | undefined
try {
  config = loadConfig()
  database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.databaseUrl ? undefined : config.dataDir,
    poolSize: config.dbPoolSize,
    connectTimeout: config.dbConnectTimeout,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    role: 'the server',
  })
  await database.migrate()
  app = await buildApp(config, database)
  await app.listen({ port: config.port, host: config.host })
  await createDemoProject(config, database)
} catch (error) {
  const problem = setupProblem(error, config)
  if (!problem) throw error
  process.stderr.write(`Cannot start: ${problem}\n`)
  await app?.close()
  await database?.close()
  process.exit(1)
}

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) app!.log.error({ err }, 'shutting down after an error')
  else app!.log.info({ signal }, 'shutting down')
  await app!.close()
  await database!.close()
})
