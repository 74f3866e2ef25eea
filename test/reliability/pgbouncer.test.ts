// The server behind PgBouncer (the Debian package, 1.18) in transaction pooling mode, which gives
// each transaction, or each statement outside one, whichever server connection is free: with
// DB_PREPARE=false every statement runs unnamed, and nothing depends on a session. Runs on a
// new database of its own, migrated through PgBouncer; fails, never skips, when PgBouncer or
// PostgreSQL cannot be started or reached. (CI also runs the contract tests through it: .ci/pgbouncer.)
import { readdirSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openConfiguredDatabase, openDatabase, warnWithoutStatementTimeout } from '../../src/db/client.js'
import { loadConfig, SetupError } from '../../src/config.js'
import { rowsOf } from '../../src/db/results.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { migrationsFolder } from '../../src/paths.js'
import { call } from '../helpers/app.js'
import { freshPostgresDatabase } from '../helpers/db.js'
import { fileTeardown, thisFile } from '../helpers/folder-suite.js'
import { startPgbouncer } from '../helpers/pgbouncer.js'

const direct = await freshPostgresDatabase(thisFile)
const bouncer = await startPgbouncer(direct)
const url = bouncer.url(direct)
const admin = postgres(direct, { max: 1, onnotice: () => {} })
// The file's cleanups run last in, first out: the pools below close first, then PgBouncer, then
// the database goes.
fileTeardown(async () => {
  await admin.end({ timeout: 5 })
  await bouncer.stop()
})

const open = async (poolSize: number) => {
  const handle = await openDatabase({ databaseUrl: url, poolSize, prepare: false })
  fileTeardown(() => handle.close())
  return handle
}

t.test('two instances migrate at once through PgBouncer, and no lock outlives the migration', async (t) => {
  const [a, b] = await Promise.all([open(2), open(2)])
  await Promise.all([a.migrate(), b.migrate()])
  const applied = await admin`select count(*)::int as n from drizzle.__drizzle_migrations`
  t.equal(applied[0]!.n, readdirSync(migrationsFolder).filter((file) => file.endsWith('.sql')).length, 'each migration applied once')
  // A session's advisory lock would stay with the server connection PgBouncer gave it, held
  // after the migration, and the next instance to start would wait for it forever.
  const locks = await admin`select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`
  t.same(locks, [{ n: 0 }], 'no advisory lock held once both have returned')
  await a.migrate()
  t.pass('a third migration does not wait')
})

t.test('the app with DB_PREPARE=false: concurrent writes, reads and transactions through PgBouncer', async (t) => {
  const handle = await open(10)
  const app = await buildApp({ ...defaults, logLevel: 'silent', databaseUrl: url, dbPrepare: false, rateLimitPerMinute: 1_000_000 }, handle)
  t.teardown(() => app.close())
  const { apiKey: key } = await makeRepos(handle.db).projects.create({ name: 'Behind PgBouncer', plan: 'pro', beta_enabled: true })

  // Ten pooled connections, each pipelining several statements while PostgreSQL answers.
  const created = await Promise.all(
    Array.from({ length: 40 }, (_, i) => call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: `Entry ${i}`, status: 'published' } })),
  )
  t.same([...new Set(created.map((r) => r.status))], [201], 'every write answered 201')
  const ids = created.map((r) => r.json.data.id as string)
  const read = await Promise.all(ids.map((id) => call(t, app, { url: `/v1/changelog/${id}`, key })))
  t.same([...new Set(read.map((r) => r.status))], [200], 'every read answered 200')
  t.same(read.map((r) => r.json.data.id), ids, 'each read its own entry')
  const page = await call(t, app, { url: '/v1/changelog?limit=50', key })
  t.equal(page.json.data.length, 40, 'the list sees all of them')

  // Enrollment runs in a transaction; 30 at once, of 10 addresses, settle into 10 testers.
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Pooled', status: 'active' } })
  const enrolled = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: `t${i % 10}@example.com` } }),
    ),
  )
  t.same(enrolled.map((r) => r.status).sort(), [...Array(10).fill(201), ...Array(20).fill(200)].sort(), '10 × 201, 20 × 200')
  const testers = rowsOf<{ n: number }>(await handle.db.execute(sql`select count(*)::int as n from beta_testers where beta_program_id = ${program.json.data.id}`))
  t.same(testers, [{ n: 10 }])
})

t.test('a statement with parameters, sent while another runs on its connection, is answered', async (t) => {
  // Unnamed, a statement with parameters goes out in two steps: Parse, Describe and Flush first
  // (the driver learns its parameters' types), then Bind, Execute and Sync. Pipelined behind
  // another statement's Sync, the first step reached the server connection that PgBouncer 1.18
  // handed back at that statement's ReadyForQuery ("got packet from server when not linked"):
  // PgBouncer dropped the answer, closed the server connection, and the statement waited for
  // ever, a request with it (found by a deployment review). With DB_PREPARE=false nothing is
  // pipelined. A hang here fails the test on its timeout.
  t.setTimeout(60_000)
  const handle = await open(4)
  let next = 0
  const settled: string[] = []
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < 2000) {
        const n = next++
        const statement = n % 3 === 0 ? sql`select 1 as one` : sql`select ${n}::int as n, ${`x${n}`}::text as t`
        settled.push(await handle.db.execute(statement).then(() => 'answered', (error: { code?: string }) => `failed ${error.code}`))
      }
    }),
  )
  t.same([...new Set(settled)], ['answered'], 'every statement answered')
  t.equal(settled.length, 2000)
})

t.test('a statement_timeout that did not reach PostgreSQL is one warn line at start; one that did, none', async (t) => {
  // PgBouncer drops DB_STATEMENT_TIMEOUT_MS (ignore_startup_parameters); without a timeout on the
  // role a statement waiting on a lock reads as an outage on every instance (found by a fleet review).
  const warned = async (handle: Awaited<ReturnType<typeof open>>) => {
    const lines: string[] = []
    await warnWithoutStatementTimeout(handle, { warn: (line) => lines.push(line) })
    return lines.some((line) => /without a statement_timeout/.test(line))
  }
  t.equal(await warned(await open(1)), true, 'through PgBouncer, with no timeout on the role: warned')
  const directly = await openDatabase({ databaseUrl: direct, poolSize: 1, statementTimeoutMs: 5000 })
  fileTeardown(() => directly.close())
  t.equal(await directly.statementTimeoutMs(), 5000, 'straight to PostgreSQL, the timeout asked for at connect')
  t.equal(await warned(directly), false, 'then no warning')
})

t.test('a PgBouncer that refuses statement_timeout refuses the start in one line naming the fix', async (t) => {
  // It took the migration (whose connection sends no statement_timeout), then refused every
  // connection of the pool: the server listened and answered 503 to everything, the admin CLI
  // said "retry shortly", and only PgBouncer's log said why (found by a newcomer's review).
  const strict = await startPgbouncer(direct, { misconfigured: 'ignore_startup_parameters' })
  t.teardown(() => strict.stop())
  const config = loadConfig({ DATABASE_URL: strict.url(direct), DB_PREPARE: 'false' })
  const refusal = await openConfiguredDatabase(config, 'the server').then(
    () => undefined,
    (error: unknown) => error,
  )
  t.ok(refusal instanceof SetupError, 'a configuration refusal, one line')
  t.match((refusal as Error).message, /unsupported startup parameter: statement_timeout.*add `ignore_startup_parameters = statement_timeout` to its \[pgbouncer\] section/)
  t.notOk((refusal as Error).message.includes('\n'), 'on one line')
})
