// GET /v1/changelog?status= (contract §8): the team's own view of its changelog. Each list has
// its members and its order, pages alike by offset and cursor (a cursor holds its status and
// label), and every record says its status, read by the same clock that selected it.
import { eq, sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { changelog_entries } from '../../src/db/schema.js'
import { cursorOwner, encodeCursor } from '../../src/domain/cursor.js'
import { newId } from '../../src/domain/ids.js'
import { hashApiKey } from '../../src/domain/secrets.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

type Entry = { id: string; status: string; published_at: string | null; updated_at: string; created_at: string; labels: string[]; title: string; locale: string }
type Page = { status: number; json: { data: Entry[]; pagination: { limit: number; offset: number; has_more: boolean; next_cursor: string | null }; code?: string } }

const get = async (t: Test, key: string, url: string) => (await call(t, await testApp(), { url, key })) as unknown as Page
const ids = (res: Page) => res.json.data.map((e) => e.id)
/** GET of one entry. */
const one = async (t: Test, key: string, id: string) => (await call(t, await testApp(), { url: `/v1/changelog/${id}`, key })).json.data as Entry

const day = (n: number) => new Date(Date.UTC(2025, 0, n))
/** Far enough ahead to stay scheduled whenever the tests run; ties on purpose. */
const ahead = (n: number) => new Date(Date.UTC(2090, 0, n))

type Seed = { id: string; published_at: Date | null; updated_at: Date; created_at: Date; labels: string[] }

/**
 * Four entries of each state written straight to the table, with ties in every list's column
 * (the id then decides) and created_at interleaved across states, so that each list's order is
 * its own and not the order of creation.
 */
async function seed(projectId: string): Promise<Seed[]> {
  const { db } = await testDatabase()
  const rows: Seed[] = [
    ...[1, 2, 2, 3].map((n, i) => ({ published_at: day(n), updated_at: day(20 + i), created_at: day(10 + ((i * 3) % 4)), labels: i % 2 ? ['new'] : [] })),
    ...[1, 2, 2, 3].map((n, i) => ({ published_at: ahead(n), updated_at: day(20 + i), created_at: day(10 + ((i * 3 + 1) % 4)), labels: i % 2 ? [] : ['new', 'fix'] })),
    ...[5, 6, 6, 7].map((n, i) => ({ published_at: null, updated_at: day(n), created_at: day(10 + ((i * 3 + 2) % 4)), labels: i < 2 ? ['new'] : ['fix'] })),
  ].map((row) => ({ ...row, id: newId('ch') }))
  await db.insert(changelog_entries).values(rows.map((row, i) => ({ ...row, project_id: projectId, title: `Entry ${i}`, body: '', body_html: '', version: '1.0.0', locale: 'en' })))
  return rows
}

const desc = (a: Date, b: Date) => b.getTime() - a.getTime()
const byId = (a: Seed, b: Seed) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
const now = () => Date.now()

/** Each list as the contract defines it, computed here from the rows, independently of the SQL. */
const expected: Record<string, (rows: Seed[]) => string[]> = {
  published: (rows) =>
    rows.filter((r) => r.published_at && r.published_at.getTime() <= now()).sort((a, b) => desc(a.published_at!, b.published_at!) || -byId(a, b)).map((r) => r.id),
  scheduled: (rows) =>
    rows.filter((r) => r.published_at && r.published_at.getTime() > now()).sort((a, b) => -desc(a.published_at!, b.published_at!) || byId(a, b)).map((r) => r.id),
  draft: (rows) => rows.filter((r) => r.published_at === null).sort((a, b) => desc(a.updated_at, b.updated_at) || -byId(a, b)).map((r) => r.id),
  all: (rows) => [...rows].sort((a, b) => desc(a.created_at, b.created_at) || -byId(a, b)).map((r) => r.id),
}
const statusOf = (row: Seed) => (row.published_at === null ? 'draft' : row.published_at.getTime() > now() ? 'scheduled' : 'published')

/** Follows next_cursor from the first page to the end. */
async function walk(t: Test, key: string, query: string, limit: number) {
  let res = await get(t, key, `/v1/changelog?${query}&limit=${limit}`)
  const pages = [ids(res)]
  const offsets = [res.json.pagination.offset]
  while (res.json.pagination.next_cursor) {
    res = await get(t, key, `/v1/changelog?${query}&limit=${limit}&cursor=${res.json.pagination.next_cursor}`)
    t.equal(res.status, 200)
    pages.push(ids(res))
    offsets.push(res.json.pagination.offset)
  }
  return { pages, offsets }
}

t.test('each status lists its entries in its own order, each saying its status', async (t) => {
  const { id, key } = await createProject()
  const rows = await seed(id)
  for (const status of ['published', 'scheduled', 'draft', 'all']) {
    const res = await get(t, key, `/v1/changelog?status=${status}`)
    t.equal(res.status, 200, status)
    t.strictSame(ids(res), expected[status]!(rows), `${status}: members and order`)
    const byRow = new Map(rows.map((r) => [r.id, r]))
    t.strictSame(res.json.data.map((e) => e.status), res.json.data.map((e) => statusOf(byRow.get(e.id)!)), `${status}: every record says its status`)
    if (status !== 'all') t.ok(res.json.data.every((e) => e.status === status), `${status}: all ${status}`)
  }
  t.equal((await get(t, key, '/v1/changelog?status=all')).json.data.length, 12, 'all: every entry')
  t.strictSame(ids(await get(t, key, '/v1/changelog')), expected.published!(rows), 'no status is published, exactly as before')
})

t.test('a scheduled entry moves to published when its time passes, with no write', async (t) => {
  const { key } = await createProject()
  const app = await testApp()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Later', status: 'scheduled', published_at: ahead(1).toISOString() } })
  t.equal(created.json.data.status, 'scheduled', 'POST says scheduled')
  const entry = created.json.data as Entry
  t.strictSame(ids(await get(t, key, '/v1/changelog?status=scheduled')), [entry.id])
  t.strictSame(ids(await get(t, key, '/v1/changelog')), [])

  // As the clock would: its time is now in the past.
  const { db } = await testDatabase()
  await db.update(changelog_entries).set({ published_at: sql`now() - interval '1 second'` }).where(eq(changelog_entries.id, entry.id))

  t.strictSame(ids(await get(t, key, '/v1/changelog?status=scheduled')), [], 'gone from scheduled')
  const published = await get(t, key, '/v1/changelog?status=published')
  t.strictSame(ids(published), [entry.id], 'in published')
  t.equal(published.json.data[0]!.status, 'published')
  t.equal((await one(t, key, entry.id)).status, 'published', 'GET says published')
  t.equal((await get(t, key, '/v1/changelog?status=all')).json.data[0]!.status, 'published', 'all says published')
})

t.test('drafts follow their edits: the most recently edited first', async (t) => {
  const { key } = await createProject()
  const app = await testApp()
  const drafts: string[] = []
  for (const title of ['One', 'Two', 'Three']) drafts.push((await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title } })).json.data.id)
  // Distinct past edit times, so that the order does not hang on how fast the machine is.
  const { db } = await testDatabase()
  for (const [i, draft] of drafts.entries()) await db.update(changelog_entries).set({ updated_at: day(i + 1) }).where(eq(changelog_entries.id, draft))
  t.strictSame(ids(await get(t, key, '/v1/changelog?status=draft')), [drafts[2], drafts[1], drafts[0]])

  const edited = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${drafts[0]}`, key, body: { body: 'Edited' } })
  t.equal(edited.json.data.status, 'draft', 'PATCH says draft')
  t.strictSame(ids(await get(t, key, '/v1/changelog?status=draft')), [drafts[0], drafts[2], drafts[1]], 'the edited draft comes first')
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${drafts[1]}`, key, body: { locale: 'fr', title: 'Deux' } })
  t.strictSame(ids(await get(t, key, '/v1/changelog?status=draft')), [drafts[1], drafts[0], drafts[2]], 'writing a translation is an edit too')

  const published = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${drafts[1]}`, key, body: { status: 'published' } })
  t.equal(published.json.data.status, 'published', 'PATCH says published')
  t.strictSame(ids(await get(t, key, '/v1/changelog?status=draft')), [drafts[0], drafts[2]], 'a published draft leaves the drafts')
})

t.test('every list pages alike by offset and by cursor', async (t) => {
  const { id, key } = await createProject()
  const rows = await seed(id)
  for (const status of ['published', 'scheduled', 'draft', 'all']) {
    for (const label of ['', '&label=new']) {
      const query = `status=${status}${label}`
      const full = ids(await get(t, key, `/v1/changelog?${query}&limit=100`))
      const want = expected[status]!(rows.filter((r) => !label || r.labels.includes('new')))
      t.strictSame(full, want, `${query}: the whole list`)
      const { pages, offsets } = await walk(t, key, query, 2)
      t.strictSame(pages.flat(), want, `${query}: the cursor walk is the list`)
      t.strictSame(offsets, pages.map((_, i) => i * 2), `${query}: exact offsets`)
      const byOffset: string[] = []
      for (let offset = 0; offset < want.length; offset += 2) byOffset.push(...ids(await get(t, key, `/v1/changelog?${query}&limit=2&offset=${offset}`)))
      t.strictSame(byOffset, want, `${query}: the offset walk is the list`)
    }
  }
})

t.test('a cursor holds its status and label: sent alone it goes on with its list; with other filters it is a 400', async (t) => {
  const { id, key } = await createProject()
  await seed(id)
  const cursor = async (query: string) => (await get(t, key, `/v1/changelog?${query}&limit=1`)).json.pagination.next_cursor!
  const refused = async (query: string, why: string) => {
    const res = await get(t, key, `/v1/changelog?${query}&limit=1`)
    t.equal(res.status, 400, why)
    t.equal(res.json.code, 'validation_failed', why)
  }
  const draft = await cursor('status=draft')
  await refused(`status=scheduled&cursor=${draft}`, 'a draft cursor in scheduled')
  await refused(`status=published&cursor=${draft}`, 'a draft cursor in the published list, asked for by name')
  // Alone, the cursor goes on with the list that gave it (found by an outside review: it was a 400).
  const second = await get(t, key, `/v1/changelog?status=draft&limit=1&offset=1`)
  const alone = await get(t, key, `/v1/changelog?cursor=${draft}&limit=1`)
  t.equal(alone.status, 200, 'a draft cursor alone')
  t.strictSame(ids(alone), ids(second), 'is the draft list\'s second page')
  t.equal(alone.json.data[0]!.status, 'draft')
  await refused(`status=draft&label=new&cursor=${draft}`, 'a cursor without a label, sent with one')
  const labelled = await cursor('status=draft&label=new')
  const labelledSecond = await get(t, key, `/v1/changelog?status=draft&label=new&limit=1&offset=1`)
  for (const query of [`cursor=${labelled}`, `status=draft&cursor=${labelled}`, `label=new&cursor=${labelled}`]) {
    const res = await get(t, key, `/v1/changelog?${query}&limit=1`)
    t.equal(res.status, 200, `${query}: the filters left out are the cursor's`)
    t.strictSame(ids(res), ids(labelledSecond), `${query}: the labelled draft list's second page`)
  }
  await refused(`status=draft&label=fix&cursor=${labelled}`, 'a labelled cursor with another label')
  t.equal((await get(t, key, `/v1/changelog?status=draft&label=NEW&cursor=${labelled}`)).status, 200, 'the same label, however written')
  t.equal((await get(t, key, `/v1/changelog?status=draft&label=new&locale=fr&cursor=${labelled}`)).status, 200, 'the locale may change')

  // The default list's cursors are the ones issued before status existed, and serve status=published.
  const published = await cursor('')
  t.equal((await get(t, key, `/v1/changelog?status=published&cursor=${published}`)).status, 200, 'a default cursor serves status=published')
  await refused(`status=all&cursor=${published}`, 'a published cursor in all')
})

t.test('a forged cursor holding a label no list could store is a 400, not a 500 (found by an attacker review)', async (t) => {
  const { id, key } = await createProject()
  await seed(id)
  // A cursor is readable: any key holder can write one for its own key with the label it likes.
  const forged = (label: string) =>
    encodeCursor(`${cursorOwner(hashApiKey(key))}/changelog:all:${JSON.stringify(label)}`, { at: day(1), id: 'ch_000000000000000000000', offset: 1 })
  t.equal((await get(t, key, `/v1/changelog?limit=1&cursor=${forged('new')}`)).status, 200, 'the forgery is a cursor the server accepts with a storable label')
  for (const [label, what] of [
    ['a\u0000', 'U+0000 (PostgreSQL refused the statement: a 500)'],
    ['a\ud800', 'a lone surrogate'],
    ['New', 'a label not lowercased'],
  ] as const) {
    const res = await get(t, key, `/v1/changelog?limit=1&cursor=${forged(label)}`)
    t.equal(res.status, 400, what)
    t.equal(res.json.code, 'validation_failed', what)
  }
})

t.test('an unknown status is a 400', async (t) => {
  const { key } = await createProject()
  for (const status of ['archived', 'Published', 'DRAFT', '', 'published,draft']) {
    const res = await get(t, key, `/v1/changelog?status=${status}`)
    t.equal(res.status, 400, `status=${status}`)
    t.equal(res.json.code, 'validation_failed')
  }
  const twice = await get(t, key, '/v1/changelog?status=draft&status=all')
  t.equal(twice.status, 400, 'one status only')
})

t.test('label filters every list, after the normalisation labels are stored with, and combines with locale', async (t) => {
  const { key } = await createProject()
  const app = await testApp()
  const post = async (body: object) => (await call(t, app, { method: 'POST', url: '/v1/changelog', key, body })).json.data as Entry
  const dark = await post({ title: 'Dark mode', labels: ['New', 'UI'], status: 'published', published_at: day(2).toISOString() })
  const fix = await post({ title: 'Crash fix', labels: ['fix'], status: 'published', published_at: day(3).toISOString() })
  const draft = await post({ title: 'Offline', labels: ['  NEW '] })
  const later = await post({ title: 'Sync', labels: ['new'], status: 'scheduled', published_at: ahead(1).toISOString() })
  const spaced = await post({ title: 'Spaced', labels: ['Dark Mode'], status: 'published', published_at: day(1).toISOString() })
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${dark.id}`, key, body: { locale: 'pt-BR', title: 'Modo escuro' } })
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${draft.id}`, key, body: { locale: 'pt-BR', title: 'Sem conexão' } })

  t.strictSame(ids(await get(t, key, '/v1/changelog?label=new')), [dark.id], 'published with the label')
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=%20New%20')), [dark.id], '?label=%20New%20 matches new')
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=NEW&status=draft')), [draft.id], 'with status draft')
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=new&status=scheduled')), [later.id], 'with status scheduled')
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=new&status=all')).sort(), [dark.id, draft.id, later.id].sort(), 'with status all')
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=fix&status=all')), [fix.id])
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=dark%20mode')), [spaced.id], 'a label with a space')
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=ne')), [], 'a whole label, never a part')
  t.strictSame(ids(await get(t, key, '/v1/changelog?label=nothing')), [], 'a label no entry has: an empty list')

  const translated = await get(t, key, '/v1/changelog?label=new&status=all&locale=pt-br')
  const titles = Object.fromEntries(translated.json.data.map((e) => [e.id, [e.title, e.locale]]))
  t.strictSame(titles, { [dark.id]: ['Modo escuro', 'pt-BR'], [draft.id]: ['Sem conexão', 'pt-BR'], [later.id]: ['Sync', 'en'] }, 'label, status and locale together')
})

t.test('a label outside the bounds of labels is a 400; one no stored label can be matches nothing', async (t) => {
  const { key } = await createProject()
  for (const label of ['', '%20%20', 'a'.repeat(33), '%00', 'a%00b', '%ZZ', '%E0%A4%A', '%ED%A0%80']) {
    const res = await get(t, key, `/v1/changelog?label=${label}`)
    t.equal(res.status, 400, `label=${label}`)
    t.equal(res.json.code, 'validation_failed')
  }
  t.equal((await get(t, key, `/v1/changelog?label=${'a'.repeat(32)}`)).status, 200, '32 characters')
  t.equal((await get(t, key, `/v1/changelog?label=%20${'A'.repeat(32)}%20`)).status, 200, '32 characters once trimmed')
  const longer = await get(t, key, `/v1/changelog?status=all&label=${encodeURIComponent('İ'.repeat(17))}`)
  t.equal(longer.status, 200, 'longer than a label once lowercased: no 400, since the schema cannot say so')
  t.strictSame(longer.json.data, [], 'and nothing matches it')
  await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body: { title: 'Percent', labels: ['%ZZ'] } })
  t.equal((await get(t, key, '/v1/changelog?status=draft&label=%25ZZ')).json.data.length, 1, 'a label with a percent sign, encoded')
})

t.test('every entry record says its status: POST, GET, PATCH and lists', async (t) => {
  const { key } = await createProject()
  const app = await testApp()
  const cases = [
    { body: { title: 'Draft' }, status: 'draft' },
    { body: { title: 'Now', status: 'published' }, status: 'published' },
    { body: { title: 'Old', status: 'published', published_at: day(1).toISOString() }, status: 'published' },
    { body: { title: 'Later', status: 'scheduled', published_at: ahead(1).toISOString() }, status: 'scheduled' },
    { body: { title: 'Future-dated publish', status: 'published', published_at: ahead(2).toISOString() }, status: 'scheduled' },
  ]
  for (const { body, status } of cases) {
    const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body })
    t.equal(created.json.data.status, status, `POST ${body.title}`)
    const entry = created.json.data as Entry
    t.equal((await one(t, key, entry.id)).status, status, `GET ${body.title}`)
    t.equal((await call(t, app, { method: 'PATCH', url: `/v1/changelog/${entry.id}`, key, body: {} })).json.data.status, status, `empty PATCH ${body.title}`)
    t.equal((await call(t, app, { method: 'PATCH', url: `/v1/changelog/${entry.id}`, key, body: { version: '1.0.1' } })).json.data.status, status, `PATCH ${body.title}`)
  }
  const moved = (await get(t, key, '/v1/changelog?status=scheduled')).json.data[0]!
  const rescheduled = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${moved.id}`, key, body: { published_at: day(1).toISOString() } })
  t.equal(rescheduled.json.data.status, 'published', 'a past date publishes, and the answer says so')
  const unpublished = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${moved.id}`, key, body: { status: 'draft' } })
  t.equal(unpublished.json.data.status, 'draft')
})

t.test('a replayed POST returns the stored answer, status as of the first request', async (t) => {
  const { key } = await createProject()
  const app = await testApp()
  const request = { method: 'POST' as const, url: '/v1/changelog', key, headers: { 'idempotency-key': `replay-${newId('ch')}` }, body: { title: 'Later', status: 'scheduled', published_at: ahead(1).toISOString() } }
  const first = await call(t, app, request)
  t.equal(first.json.data.status, 'scheduled')
  const { db } = await testDatabase()
  await db.update(changelog_entries).set({ published_at: sql`now() - interval '1 second'` }).where(eq(changelog_entries.id, first.json.data.id))
  const replay = await call(t, app, request)
  t.equal(replay.headers['idempotency-replayed'], 'true')
  t.strictSame(replay.json, first.json, 'the stored answer, unchanged (documented on ChangelogEntry.status)')
  t.equal((await one(t, key, first.json.data.id)).status, 'published', 'GET gives the current status')
})
