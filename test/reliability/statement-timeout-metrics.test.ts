// GET /metrics on PostgreSQL: a statement that statement_timeout cancels is counted. Needs
// PostgreSQL itself (test/ops/metrics.test.ts has the rest of /metrics, on both databases).
import postgres from 'postgres'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { ADMIN_TOKEN, call } from '../helpers/app.js'
import { postgresTestUrl } from '../helpers/db.js'
import { admin, scrape, value } from '../helpers/metrics.js'

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
