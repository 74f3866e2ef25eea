// The embedded database's client (src/db/pglite-prepared.ts) parses each statement once and runs it
// by name: its answers must be exactly PGlite's own, rows, counts and errors alike.
import { PGlite, types } from '@electric-sql/pglite'
import t from 'tap'
import { PreparedPGlite } from '../../src/db/pglite-prepared.js'

const pg = new PreparedPGlite()
t.teardown(() => pg.close())
/** PGlite's own query(), on the same database, to compare with. */
const plain = (text: string, params?: unknown[], options?: Parameters<PGlite['query']>[2]) => PGlite.prototype.query.call(pg, text, params, options)

t.before(async () => {
  await pg.exec(`create table notes (id int primary key, body text, tags text[], at timestamptz, done boolean default false)`)
})

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
