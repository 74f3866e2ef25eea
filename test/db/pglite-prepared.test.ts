// The embedded database's client (src/db/pglite-prepared.ts) parses each statement once and runs it
// by name: its answers must be exactly PGlite's own, rows, counts and errors alike.
import { PGlite, types } from '@electric-sql/pglite'
import t from 'tap'
import { PreparedPGlite } from '../../src/db/pglite-prepared.js'
import { newPgliteDataDir } from '../helpers/db.js'
import { fileTeardown } from '../helpers/folder-suite.js'

const pg = new PreparedPGlite(undefined, { loadDataDir: await newPgliteDataDir() })
fileTeardown(() => pg.close())
/** PGlite's own query(), on the same database, to compare with. */
const plain = (text: string, params?: unknown[], options?: Parameters<PGlite['query']>[2]) => PGlite.prototype.query.call(pg, text, params, options)

await pg.exec(`create table notes (id int primary key, body text, tags text[], at timestamptz, done boolean default false)`)

t.test('answers exactly as PGlite does, in both row modes and with parsers of its own', async (t) => {
  const insert = 'insert into notes (id, body, tags, at) values ($1, $2, $3, $4) returning *'
  const inserted = await pg.query(insert, [1, 'first', ['a', 'b'], new Date('2026-01-02T03:04:05.678Z')])
  await plain(insert, [2, null, [], null])
  t.same(inserted.rows, [{ id: 1, body: 'first', tags: ['a', 'b'], at: new Date('2026-01-02T03:04:05.678Z'), done: false }])
  t.equal(inserted.affectedRows, 1)

  const select = 'select * from notes where id = any($1) order by id'
  const raw = { rowMode: 'array' as const, parsers: { [types.TIMESTAMPTZ]: (value: string) => value } }
  for (const options of [undefined, raw]) {
    t.same(await pg.query(select, [[1, 2]], options), await plain(select, [[1, 2]], options), `rows, fields and counts (${options ? 'array' : 'object'} mode)`)
  }
  const update = 'update notes set done = $1 where id > $2'
  t.same(await pg.query(update, [true, 0]), await plain(update, [false, 0]), 'an UPDATE: no rows, its count')
  t.same(await pg.query(select, [[3]]), await plain(select, [[3]]), 'no rows')
})

t.test('each statement is parsed once, under one name', async (t) => {
  const text = 'select body from notes where id = $1'
  t.same((await pg.query(text, [1])).rows, [{ body: 'first' }])
  t.same((await pg.query(text, [2])).rows, [{ body: null }])
  const { rows } = await plain('select count(*)::int as n from pg_prepared_statements where statement = $1', [text])
  t.same(rows, [{ n: 1 }])
})

t.test("errors are PostgreSQL's, with their SQLSTATE, and leave the connection usable", async (t) => {
  await t.rejects(pg.query('insert into notes (id) values ($1)', [1]), { code: '23505' }, 'a unique violation')
  await t.rejects(pg.query('select nope from notes'), { code: '42703' }, 'a statement that does not parse')
  t.same((await pg.query('select count(*)::int as n from notes')).rows, [{ n: 2 }])
})

t.test('transactions: statements inside them run by name too, and a rollback undoes them', async (t) => {
  await t.rejects(
    pg.transaction(async (tx) => {
      await tx.query('insert into notes (id, body) values ($1, $2)', [10, 'kept?'])
      t.same((await tx.query('select body from notes where id = $1', [10])).rows, [{ body: 'kept?' }], 'visible inside')
      throw new Error('roll back')
    }),
    { message: 'roll back' },
  )
  t.same((await pg.query('select body from notes where id = $1', [10])).rows, [], 'gone after the rollback')
  await pg.transaction(async (tx) => {
    await tx.query('insert into notes (id, body) values ($1, $2)', [11, 'kept'])
  })
  t.same((await pg.query('select body from notes where id = $1', [11])).rows, [{ body: 'kept' }], 'kept after the commit')
})

t.test('a statement whose table changed shape is parsed again', async (t) => {
  const text = 'select * from notes where id = $1'
  t.same(Object.keys((await pg.query(text, [1])).rows[0] as object), ['id', 'body', 'tags', 'at', 'done'])
  await pg.exec('alter table notes add column extra text')
  t.same(Object.keys((await pg.query(text, [1])).rows[0] as object), ['id', 'body', 'tags', 'at', 'done', 'extra'])
})

t.test('a statement whose table changed shape inside a transaction fails that transaction alone, with 0A000', async (t) => {
  // The sequence of issue #13: a cached plan goes stale, the same SQL runs inside a transaction
  // (PostgreSQL aborts it with 0A000), then runs again, inside and outside transactions.
  await pg.exec(`create table shapes (id int primary key, a text)`)
  await pg.exec(`insert into shapes values (1, 'one')`)
  const text = 'select * from shapes where id = $1'
  t.same((await pg.query(text, [1])).rows, [{ id: 1, a: 'one' }], 'cached')
  await pg.exec('alter table shapes add column b text')

  await t.rejects(
    pg.transaction(async (tx) => {
      await tx.query('update shapes set a = $1 where id = $2', ['changed', 1])
      await tx.query(text, [1])
    }),
    { code: '0A000' },
    "the transaction fails with PostgreSQL's own error, not 25P02",
  )
  t.same((await pg.query(text, [1])).rows, [{ id: 1, a: 'one', b: null }], 'the same SQL runs afterwards, parsed again; the update was rolled back')
  const inside = await pg.transaction(async (tx) => (await tx.query(text, [1])).rows)
  t.same(inside, [{ id: 1, a: 'one', b: null }], 'and inside a transaction')

  await pg.exec('alter table shapes add column c int')
  t.same((await pg.query(text, [1])).rows, [{ id: 1, a: 'one', b: null, c: null }], 'outside a transaction a stale plan is parsed again and the statement retried')
})

t.test('a statement closed behind its back (DEALLOCATE ALL) is parsed again', async (t) => {
  const text = 'select body from notes where id = $1'
  const other = 'select id from notes where id = $1'
  t.same((await pg.query(text, [1])).rows, [{ body: 'first' }])
  t.same((await pg.query(other, [1])).rows, [{ id: 1 }])
  await pg.exec('deallocate all')
  t.same((await pg.query(text, [1])).rows, [{ body: 'first' }], 'outside a transaction')
  await pg.exec('deallocate all')
  await t.rejects(pg.transaction((tx) => tx.query(text, [1])), { code: '26000' }, 'inside one, it fails that transaction')
  t.same(await pg.transaction(async (tx) => (await tx.query(text, [1])).rows), [{ body: 'first' }], 'and runs in the next')
  t.same(await pg.transaction(async (tx) => (await tx.query(other, [1])).rows), [{ id: 1 }], 'as do the others it had cached, all gone alike')
})

t.test('the named statements are bounded: the least recently used is closed', async (t) => {
  const small = new PreparedPGlite(undefined, { loadDataDir: await newPgliteDataDir() }, { maxStatements: 3 })
  t.teardown(() => small.close())
  const held = async () => (await PGlite.prototype.query.call(small, 'select count(*)::int as n from pg_prepared_statements')).rows
  const texts = [1, 2, 3, 4, 5].map((n) => `select ${n} as n where $1::int is not null`)
  for (const text of texts) await small.query(text, [1])
  t.equal(small.preparedStatements, 3, 'three kept')
  t.same(await held(), [{ n: 3 }], 'and no more in PostgreSQL')
  await small.query(texts[2]!, [1]) // used: now the most recent
  await small.query(texts[0]!, [1]) // evicted earlier: parsed again, evicting texts[3]
  const { rows } = await PGlite.prototype.query.call(small, 'select statement from pg_prepared_statements order by statement')
  t.same(
    rows.map((row) => (row as { statement: string }).statement),
    [texts[0], texts[2], texts[4]],
    'the least recently used went first',
  )
  for (const text of texts) t.same((await small.query(text, [1])).rows.length, 1, 'each still answers')
})

t.test('a statement outside a transaction waits for the transaction to end, never runs inside it', async (t) => {
  const count = 'select count(*)::int as n from notes where id = $1'
  let outside: Promise<unknown> | undefined
  await t.rejects(
    pg.transaction(async (tx) => {
      await tx.query('insert into notes (id, body) values ($1, $2)', [20, 'uncommitted'])
      outside = pg.query(count, [20])
      // The transaction's statements go on meanwhile, each taking PGlite's statement lock in turn.
      for (let i = 0; i < 3; i++) await tx.query('select $1::int as i', [i])
      throw new Error('roll back')
    }),
    { message: 'roll back' },
  )
  t.same(((await outside) as { rows: unknown[] }).rows, [{ n: 0 }], 'it ran after the rollback, and did not see the row')
})

t.test('a transaction or statement as the very first call waits for PGlite to be ready, and runs', async (t) => {
  // PGlite runs a query of its own through query() while it starts; a transaction that took the
  // wrapper's lock first waited for that query forever (seen as tests hanging on a loaded data
  // directory whose first call was a transaction).
  for (const first of ['transaction', 'query'] as const) {
    const db = new PreparedPGlite(undefined, { loadDataDir: await newPgliteDataDir() })
    t.teardown(() => db.close())
    const answer =
      first === 'transaction'
        ? db.transaction((tx) => tx.query<{ one: number }>('select 1 as one'))
        : db.query<{ one: number }>('select 1 as one')
    // Cleared once the answer wins: a pending timer would keep this process alive for its 60 s.
    let timer: NodeJS.Timeout | undefined
    const stillWaiting = new Promise((resolve) => (timer = setTimeout(resolve, 60_000, 'still waiting after 60 s')))
    const settled = await Promise.race([answer.then((r) => r.rows), stillWaiting])
    clearTimeout(timer)
    t.same(settled, [{ one: 1 }], `a ${first} first`)
  }
})
