// Statements that run past DB_STATEMENT_TIMEOUT_MS on PostgreSQL: cancelled by the server, answered
// 503 unavailable, and counted in /metrics. PostgreSQL itself (PGlite has no statement timeout).
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { toApiError } from '../../src/http/errors.js'
import { ADMIN_TOKEN, call } from '../helpers/app.js'
import { postgresTestUrl } from '../helpers/db.js'
import { scrape, value } from '../helpers/metrics.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

t.test('PostgreSQL: a statement over statement_timeout is cancelled and answered 503', async (t) => {
  const url = await postgresTestUrl()
  const database = await openDatabase({ databaseUrl: url, statementTimeoutMs: 200 })
  t.teardown(() => database.close())
  const started = Date.now()
  const error = await database.db.execute(sql`select pg_sleep(5)`).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(Date.now() - started < 3000, 'cancelled well before the sleep ends')
  t.equal(toApiError(error as never).code, 'unavailable')
})

t.test('PostgreSQL: a statement cancelled by its timeout is counted, as a 503 among the others', async (t) => {
  const url = await postgresTestUrl()
  const database = await openDatabase({ databaseUrl: url, statementTimeoutMs: 1000, poolSize: 3 })
  await database.migrate()
  const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN }, database)
  const locker = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(async () => {
    await app.close()
    await database.close()
    await locker.end({ timeout: 5 })
  })
  const created = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Locked' } })
  const projectId = created.json.data.id as string
  // Another session holds the project's row: the update waits on it until statement_timeout
  // cancels it, however fast the machine is.
  await locker.begin(async (tx) => {
    await tx`select 1 from projects where id = ${projectId} for update`
    const res = await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${projectId}`, headers: admin, body: { name: 'Waited' } })
    t.same([res.status, res.json.code], [503, 'unavailable'])
  })
  const m = await scrape(t, app)
  t.equal(value(m, 'db_statement_timeouts_total'), 1)
  t.equal(value(m, 'db_unavailable_total'), 1)
  t.equal(value(m, 'db_pool_connections'), 3, 'DB_POOL_SIZE')
})
