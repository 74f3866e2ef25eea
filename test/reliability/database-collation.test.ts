// Lists order ties by id byte by byte whatever the database's collation: on a database created
// with a language's collation (here ICU en-US, which compares letters ignoring case), ids were
// ordered `ch_B...` before `ch_a...` in a descending list, while PGlite and a C database put
// `ch_a...` first (found by a contract review). Every id column is COLLATE "C" (migration 0020).
import postgres from 'postgres'
import t from 'tap'
import { appOnFreshPostgres, call } from '../helpers/app.js'

t.test('a database with a case-insensitive collation lists ties in the ids\' byte order, by offset and by cursor', async (t) => {
  const { url, app, key } = await appOnFreshPostgres(t, { createOptions: "template template0 locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'" })

  const sql = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end({ timeout: 5 }))
  const [collation] = await sql`select datcollate, daticulocale from pg_database where datname = current_database()`
  t.equal(collation?.daticulocale, 'en-US', 'the database compares text as ICU en-US does')
  const [icu] = await sql`select 'ch_a' < 'ch_B' as a_first`
  t.equal(icu?.a_first, true, 'which puts a before B, unlike byte order')

  // Three entries at one moment, given ids whose byte order and en-US order differ.
  const ids = ['ch_aaaaaaaaaaaaaaaaaaaaa', 'ch_Bbbbbbbbbbbbbbbbbbbbb', 'ch_0cccccccccccccccccccc']
  for (const id of ids) {
    const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: id, status: 'published', published_at: '2026-01-01T00:00:00Z' } })
    t.equal(created.status, 201)
    await sql`update changelog_entries set id = ${id} where id = ${created.json.data.id}`
  }
  const byteOrderDescending = [...ids].sort().reverse()
  t.same(byteOrderDescending, ['ch_aaaaaaaaaaaaaaaaaaaaa', 'ch_Bbbbbbbbbbbbbbbbbbbbb', 'ch_0cccccccccccccccccccc'])

  const page = await call(t, app, { url: '/v1/changelog?limit=10', key })
  t.same(page.json.data.map((e: { id: string }) => e.id), byteOrderDescending, 'by offset')
  const walked: string[] = []
  let cursor: string | null = null
  do {
    const res = await call(t, app, { url: `/v1/changelog?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key })
    walked.push(...res.json.data.map((e: { id: string }) => e.id))
    cursor = res.json.pagination.next_cursor
  } while (cursor)
  t.same(walked, byteOrderDescending, 'by cursor, one at a time')
})
