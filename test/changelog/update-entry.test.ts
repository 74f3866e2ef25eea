import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

type T = Parameters<typeof call>[0]

async function create(t: T, key: string, body: object) {
  const res = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body })
  t.equal(res.status, 201)
  return res.json.data
}

const patch = async (t: T, key: string | undefined, id: string, body: unknown) =>
  call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${id}`, key, body })

const ids = async (t: T, key: string) =>
  (await call(t, await testApp(), { url: '/v1/changelog', key })).json.data.map((e: { id: string }) => e.id)

const FULL = { title: 'Dark mode', body: 'Body', labels: ['ui'], version: '2.0.0', locale: 'en-GB', status: 'published', published_at: '2024-06-01T00:00:00.000Z' }

t.test('only the fields sent change; the others keep their values', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, FULL)
  const cases: [object, object][] = [
    [{ title: 'Renamed' }, { title: 'Renamed' }],
    [{ body: '' }, { body: '' }],
    [{ labels: ['Fix', 'fix', 'API '] }, { labels: ['fix', 'api'] }],
    [{ version: '2.0.1' }, { version: '2.0.1' }],
  ]
  let current = entry
  for (const [body, changed] of cases) {
    const res = await patch(t, key, entry.id, body)
    t.equal(res.status, 200)
    const { updated_at, ...rest } = res.json.data
    const { updated_at: before, ...expected } = { ...current, ...changed }
    t.strictSame(rest, expected, JSON.stringify(body))
    t.ok(updated_at > before, 'updated_at moves on a write')
    current = res.json.data
  }
  const got = await call(t, await testApp(), { url: `/v1/changelog/${entry.id}`, key })
  t.strictSame(got.json.data, current, 'the changes are stored')
})

t.test('an empty body is a 200 no-op; so is the base locale alone', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, FULL)
  for (const body of [{}, { locale: 'EN-GB' }]) {
    const res = await patch(t, key, entry.id, body)
    t.equal(res.status, 200)
    t.strictSame(res.json.data, entry, JSON.stringify(body))
  }
})

t.test('status published keeps the date of an entry already published: re-sending it never reorders the list', async (t) => {
  const { key } = await createProject()
  const older = await create(t, key, { title: 'Older', status: 'published', published_at: '2024-01-01T00:00:00.000Z' })
  const newer = await create(t, key, { title: 'Newer', status: 'published' })
  const res = await patch(t, key, older.id, { status: 'published' })
  t.equal(res.json.data.published_at, older.published_at)
  t.strictSame(await ids(t, key), [newer.id, older.id])
})

t.test('status published publishes a draft or a scheduled entry now, or at the date sent', async (t) => {
  const { key } = await createProject()
  const draft = await create(t, key, { title: 'Draft' })
  const scheduled = await create(t, key, { title: 'Later', status: 'scheduled', published_at: new Date(Date.now() + 3_600_000).toISOString() })
  for (const entry of [draft, scheduled]) {
    const before = Date.now()
    const res = await patch(t, key, entry.id, { status: 'published' })
    const at = Date.parse(res.json.data.published_at)
    t.ok(at >= before - 1000 && at <= Date.now() + 1000, `${entry.title} is published now`)
  }
  t.strictSame((await ids(t, key)).sort(), [draft.id, scheduled.id].sort(), 'both are in the very next list')

  const backdated = await patch(t, key, draft.id, { status: 'published', published_at: '2023-03-03T03:03:03.333+01:00' })
  t.equal(backdated.json.data.published_at, '2023-03-03T02:03:03.333Z')
})

t.test('status scheduled needs a future date, except on an entry already scheduled', async (t) => {
  const { key } = await createProject()
  const later = new Date(Date.now() + 3_600_000).toISOString()
  const scheduled = await create(t, key, { title: 'Later', status: 'scheduled', published_at: later })
  const kept = await patch(t, key, scheduled.id, { status: 'scheduled', title: 'Still later' })
  t.equal(kept.status, 200)
  t.equal(kept.json.data.published_at, later, 'the date is kept')

  const published = await create(t, key, { title: 'Out', status: 'published' })
  const draft = await create(t, key, { title: 'Draft' })
  for (const entry of [published, draft]) {
    const res = await patch(t, key, entry.id, { status: 'scheduled' })
    t.equal(res.status, 400, entry.title)
    t.strictSame(res.json.errors, [{ in: 'body', path: '/published_at', message: 'is required with status scheduled unless the entry is already scheduled' }])
  }
  const past = await patch(t, key, scheduled.id, { status: 'scheduled', published_at: '2020-01-01T00:00:00Z' })
  t.equal(past.status, 400)

  const unpublished = await patch(t, key, published.id, { status: 'scheduled', published_at: later })
  t.equal(unpublished.json.data.published_at, later, 'a published entry can be scheduled again')
  t.strictSame(await ids(t, key), [], 'and leaves the list')
})

t.test('status draft clears published_at and the entry leaves the list', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Out', status: 'published' })
  const res = await patch(t, key, entry.id, { status: 'draft' })
  t.equal(res.json.data.published_at, null)
  t.strictSame(await ids(t, key), [])
  const withDate = await patch(t, key, entry.id, { status: 'draft', published_at: '2020-01-01T00:00:00Z' })
  t.equal(withDate.status, 400)
})

t.test('published_at without status moves a scheduled or published date, and is 400 on a draft', async (t) => {
  const { key } = await createProject()
  const scheduled = await create(t, key, { title: 'Later', status: 'scheduled', published_at: new Date(Date.now() + 3_600_000).toISOString() })
  const published = await create(t, key, { title: 'Out', status: 'published' })
  const draft = await create(t, key, { title: 'Draft' })

  const later = new Date(Date.now() + 7_200_000).toISOString()
  t.equal((await patch(t, key, scheduled.id, { published_at: later })).json.data.published_at, later)
  t.equal((await patch(t, key, published.id, { published_at: '2022-02-02T00:00:00.000Z' })).json.data.published_at, '2022-02-02T00:00:00.000Z')

  const res = await patch(t, key, draft.id, { published_at: '2022-02-02T00:00:00.000Z' })
  t.equal(res.status, 400)
  t.strictSame(res.json.errors, [{ in: 'body', path: '/published_at', message: 'cannot be set on a draft without a status (scheduled or published)' }])
  const unchanged = await call(t, await testApp(), { url: `/v1/changelog/${draft.id}`, key })
  t.strictSame(unchanged.json.data, draft, 'a refused update writes nothing')
})

t.test('400 comes before 404', async (t) => {
  const { key } = await createProject()
  const unknown = 'ch_000000000000000000000'
  for (const id of [unknown, 'not-an-id']) {
    t.equal((await patch(t, key, id, { title: '' })).status, 400, `schema (${id})`)
    t.equal((await patch(t, key, id, { status: 'scheduled', published_at: '2020-01-01T00:00:00Z' })).status, 400, `publishing (${id})`)
    t.equal((await patch(t, key, id, { labels: ['İ'.repeat(20)] })).status, 400, `labels (${id})`)
    t.equal((await patch(t, key, id, { title: 'Fine' })).status, 404, `a valid body (${id})`)
  }
})

t.test("an id of the wrong shape or of another project is 404, and the entry is untouched", async (t) => {
  const mine = await createProject()
  const theirs = await createProject()
  const other = await create(t, theirs.key, { title: 'Theirs' })
  for (const id of [other.id, 'bp_' + other.id.slice(3), 'x']) {
    const res = await patch(t, mine.key, id, { title: 'Mine now' })
    t.equal(res.status, 404, id)
    t.equal(res.json.code, 'not_found')
  }
  const got = await call(t, await testApp(), { url: `/v1/changelog/${other.id}`, key: theirs.key })
  t.strictSame(got.json.data, other)
})

t.test('writes need the Pro plan; a key is required', async (t) => {
  const pro = await createProject()
  const entry = await create(t, pro.key, { title: 'X' })
  const free = await createProject({ plan: 'free' })
  const res = await patch(t, free.key, entry.id, { title: 'Y' })
  t.equal(res.status, 403)
  t.equal(res.json.code, 'plan_required')
  t.equal((await patch(t, undefined, entry.id, { title: 'Y' })).status, 401)
})
