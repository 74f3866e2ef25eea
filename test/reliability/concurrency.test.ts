// Races on a real PostgreSQL pool (10 connections, so the requests truly overlap in the
// database, which the single-connection PGlite cannot show): the database settles each one,
// and no client ever sees a 500, a duplicate or a record mixed from two writers.
import { eq } from 'drizzle-orm'
import t from 'tap'
import { beta_testers, changelog_entries, changelog_translations } from '../../src/db/schema.js'
import { call } from '../helpers/app.js'
import { HOOK_URL } from '../webhooks/helpers.js'
import { pgApp, proProject } from './fixtures/pg.js'

const { app, handle } = await pgApp(t, { label: 'concurrency', poolSize: 10 })
const db = handle.db

t.test('50 parallel enrollments of one email: one 201, 49 × 200, one tester', async (t) => {
  const { key } = await proProject(db, 'Concurrency: enroll')
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Enrollment race', status: 'active' } })
  t.equal(program.status, 201)
  const url = `/v1/beta/programs/${program.json.data.id}/testers`
  // The same address, spelled as clients do: the service trims and lowercases it.
  const spellings = ['race@example.com', 'Race@Example.com', ' RACE@example.COM ']
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => call(t, app, { method: 'POST', url, key, body: { email: spellings[i % spellings.length] } })),
  )
  const statuses = results.map((r) => r.status)
  t.equal(statuses.filter((s) => s === 201).length, 1, 'exactly one 201')
  t.equal(statuses.filter((s) => s === 200).length, 49, '49 × 200')
  t.same([...new Set(results.map((r) => r.json?.data?.id))].length, 1, 'every answer names the same tester')
  t.same([...new Set(results.map((r) => r.json?.data?.token))].length, 1, 'with the same token')
  t.equal(results[0]!.json.data.email, 'race@example.com')
  const rows = await db.select().from(beta_testers).where(eq(beta_testers.beta_program_id, program.json.data.id))
  t.equal(rows.length, 1, 'one row in beta_testers')
})

t.test('20 parallel creates of one program name: 20 programs, 20 distinct slugs, the first free ones', async (t) => {
  const { key } = await proProject(db, 'Concurrency: slugs')
  const results = await Promise.all(
    Array.from({ length: 20 }, () => call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Slug Race' } })),
  )
  t.same(results.map((r) => r.status), Array(20).fill(201), 'all 20 creates answer 201')
  const slugs = results.map((r) => r.json?.data?.slug as string)
  t.equal(new Set(slugs).size, 20, 'with 20 distinct slugs')
  t.same(
    [...slugs].sort(),
    ['slug-race', ...Array.from({ length: 19 }, (_, i) => `slug-race-${i + 2}`)].sort(),
    'slug-race, slug-race-2, ... slug-race-20: no slug skipped',
  )
  t.equal(new Set(results.map((r) => r.json?.data?.id)).size, 20, 'and 20 distinct ids')
})

t.test('parallel full PATCHes of one changelog entry: the record is exactly one writer’s body, the last one', async (t) => {
  const { key } = await proProject(db, 'Concurrency: patch')
  const entry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Original', body: 'original', version: '1.0.0' } })
  t.equal(entry.status, 201)
  const id = entry.json.data.id as string
  const writers = Array.from({ length: 20 }, (_, i) => ({
    title: `Title from writer ${i}`,
    body: `Body from writer ${i}. `.repeat(50 + i),
    version: `2.${i}.0`,
    labels: [`writer-${i}`],
  }))
  const results = await Promise.all(writers.map((body) => call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body })))
  t.same(results.map((r) => r.status), Array(20).fill(200), 'every PATCH answers 200')
  const own = results.filter((r, i) => {
    const d = r.json?.data
    return d && d.title === writers[i]!.title && d.body === writers[i]!.body && d.version === writers[i]!.version && d.labels[0] === writers[i]!.labels[0]
  })
  t.equal(own.length, 20, 'each PATCH answers with exactly what it wrote')

  const final = await call(t, app, { url: `/v1/changelog/${id}`, key })
  const match = writers.findIndex((w) => w.title === final.json.data.title)
  t.ok(match >= 0, `the title is one writer's (${final.json.data.title})`)
  t.same(
    { title: final.json.data.title, body: final.json.data.body, version: final.json.data.version, labels: final.json.data.labels },
    writers[match],
    'title, body, version and labels all come from that same writer',
  )
  const updatedAt = results.map((r) => r.json.data.updated_at as string)
  t.equal(new Set(updatedAt).size, 20, 'every write moved updated_at to a value of its own')
  const last = updatedAt.indexOf([...updatedAt].sort().at(-1)!)
  t.equal(match, last, 'the writer that holds the record is the one with the latest updated_at')
  t.equal(final.json.data.updated_at, updatedAt[last])

  const [row] = await db.select().from(changelog_entries).where(eq(changelog_entries.id, id))
  t.same({ title: row!.title, body: row!.body, version: row!.version, labels: row!.labels }, writers[match], 'the row in the database is that writer’s whole')
})

t.test('parallel writes of one new translation: exactly one row, whole from one writer, base untouched', async (t) => {
  const { key } = await proProject(db, 'Concurrency: translation')
  const entry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Dark mode', body: 'Every screen.', locale: 'en' } })
  t.equal(entry.status, 201)
  const id = entry.json.data.id as string
  const spellings = ['pt-BR', 'pt-br', 'PT-BR']
  const writers = Array.from({ length: 20 }, (_, i) => ({ locale: spellings[i % 3]!, title: `Modo escuro ${i}`, body: `Todas as telas ${i}.` }))
  const results = await Promise.all(writers.map((body) => call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body })))
  t.same(results.map((r) => r.status), Array(20).fill(200), 'every PATCH answers 200')
  t.same([...new Set(results.map((r) => r.json?.data?.locale))], ['pt-BR'], 'every answer is in the canonical pt-BR')

  const rows = await db.select().from(changelog_translations).where(eq(changelog_translations.entry_id, id))
  t.equal(rows.length, 1, 'exactly one row in changelog_translations')
  const row = rows[0]!
  const writer = writers.findIndex((w) => w.title === row.title)
  t.ok(writer >= 0 && writers[writer]!.body === row.body, `its title and body come from one writer (${row.title} / ${row.body})`)
  t.equal(row.locale, 'pt-BR')

  const translated = await call(t, app, { url: `/v1/changelog/${id}?locale=pt-br`, key })
  t.same([translated.json.data.title, translated.json.data.body], [row.title, row.body], 'reads serve that translation')
  const base = await call(t, app, { url: `/v1/changelog/${id}`, key })
  t.same([base.json.data.title, base.json.data.body, base.json.data.locale], ['Dark mode', 'Every screen.', 'en'], 'the base content is untouched')
})

t.test('12 parallel creates of a webhook endpoint at 9 of 10: exactly 10, never 11 or a 500', async (t) => {
  for (let round = 0; round < 3; round++) {
    const { key } = await proProject(db, `Webhook limit ${round}`)
    for (let i = 0; i < 9; i++) t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL } })).status, 201)
    const racers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: `${HOOK_URL}/${i}` } })),
    )
    const statuses = racers.map((r) => r.status)
    t.equal(statuses.filter((s) => s === 201).length, 1, `round ${round}: one 201`)
    t.equal(statuses.filter((s) => s === 409).length, 11, `round ${round}: eleven 409`)
    t.ok(racers.filter((r) => r.status === 409).every((r) => r.json.code === 'limit_exceeded'))
    const list = await call(t, app, { url: '/v1/webhook-endpoints?limit=100', key })
    t.equal(list.json.data.length, 10, `round ${round}: exactly 10 endpoints`)
  }
})
