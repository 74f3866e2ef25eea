// The postgres.js side of named statements (src/db/prepared.ts, DB_PREPARE): bounded per client,
// none at all with prepare off, and a stale plan inside a transaction fails that transaction
// alone. On PostgreSQL in both CI passes; fails, never skips, without it.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { openDatabase } from '../../src/db/client.js'
import { rowsOf } from '../../src/db/results.js'
import { preparedByDefault } from '../../src/db/prepared.js'
import { postgresTestUrl } from '../helpers/db.js'

const url = await postgresTestUrl()
const held = 'select count(*)::int as n from pg_prepared_statements'

t.test('a client prepares at most its limit of distinct texts; the others run unnamed', async (t) => {
  const raw = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => raw.end({ timeout: 5 }))
  const client = preparedByDefault(raw, 3)
  const texts = [1, 2, 3, 4, 5].map((n) => `select ${n} as n where $1::int is not null`)
  for (const text of texts) t.same([...(await client.unsafe(text, [1]))], [{ n: Number(text.split(' ')[1]) }])
  await client.begin(async (tx) => {
    for (const text of texts) await tx.unsafe(text, [1])
  })
  const statements = await raw.unsafe("select statement from pg_prepared_statements where statement like 'select _ as n %' order by statement")
  t.same(
    statements.map((row) => row.statement),
    texts.slice(0, 3),
    'the first three texts are named on the connection, inside transactions too; the fourth and fifth are not',
  )
})

t.test("with prepare on, Drizzle's statements are named, in transactions too (what prepared.ts relies on Drizzle to call)", async (t) => {
  // prepared.ts wraps the client's unsafe() and begin(), which Drizzle's postgres-js session calls
  // today: a release that calls the driver another way would drop every named statement.
  const database = await openDatabase({ databaseUrl: url, poolSize: 1, prepare: true })
  t.teardown(() => database.close())
  await database.db.execute(sql`select ${1}::int as outside`)
  await database.db.transaction(async (tx) => {
    await tx.execute(sql`select ${2}::int as inside`)
  })
  const named = rowsOf<{ statement: string }>(await database.db.execute(sql.raw("select statement from pg_prepared_statements where statement like 'select $1::int as %' order by statement")))
  t.same(
    named.map((row) => row.statement),
    ['select $1::int as inside', 'select $1::int as outside'],
  )
})

t.test('with prepare off (DB_PREPARE=false) no statement is named', async (t) => {
  const database = await openDatabase({ databaseUrl: url, poolSize: 1, prepare: false })
  t.teardown(() => database.close())
  await database.db.execute(sql`select ${1}::int as one`)
  await database.db.transaction(async (tx) => {
    await tx.execute(sql`select ${2}::int as two`)
  })
  t.same(rowsOf(await database.db.execute(sql.raw(held))), [{ n: 0 }])
})

t.test('a statement whose table changed shape inside a transaction fails that transaction alone', async (t) => {
  const table = `shapes_${process.pid}_${Date.now().toString(36)}`
  const database = await openDatabase({ databaseUrl: url, poolSize: 1 })
  t.teardown(async () => {
    await database.db.execute(sql.raw(`drop table if exists ${table}`))
    await database.close()
  })
  const { db } = database
  await db.execute(sql.raw(`create table ${table} (id int primary key, a text)`))
  await db.execute(sql.raw(`insert into ${table} values (1, 'one')`))
  const select = sql`select * from ${sql.identifier(table)} where id = ${1}`
  t.same(rowsOf(await db.execute(select)), [{ id: 1, a: 'one' }], 'prepared and cached')
  await db.execute(sql.raw(`alter table ${table} add column b text`))

  const failed = await db
    .transaction(async (tx) => {
      await tx.execute(sql`update ${sql.identifier(table)} set a = ${'changed'} where id = ${1}`)
      await tx.execute(select)
    })
    .then(
      () => undefined,
      (error: { cause?: { code?: string }; code?: string }) => error.cause?.code ?? error.code,
    )
  t.equal(failed, '0A000', "the transaction fails with PostgreSQL's own error")
  t.same(rowsOf(await db.execute(select)), [{ id: 1, a: 'one', b: null }], 'the same SQL runs afterwards; the update was rolled back')
  t.same(rowsOf(await db.transaction((tx) => tx.execute(select))), [{ id: 1, a: 'one', b: null }], 'and inside a transaction')
})
