import { randomBytes } from 'node:crypto'
import t from 'tap'
import { DIRECT_MAX_OFFSET } from '../../src/db/repos/changelog.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { changelog_entries, changelog_translations } from '../../src/db/schema.js'
import { hashApiKey } from '../../src/domain/secrets.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { explainPlan, sortsBeyondAPage, testDatabase } from '../helpers/db.js'

type T = Parameters<typeof call>[0]

async function create(t: T, key: string, body: object) {
  const res = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body })
  t.equal(res.status, 201)
  return res.json.data
}

const list = async (t: T, key: string | undefined, query = '') => call(t, await testApp(), { url: `/v1/changelog${query}`, key })

t.test('only entries whose published_at has passed, newest first', async (t) => {
  const { key } = await createProject()
  const old = await create(t, key, { title: 'Old', status: 'published', published_at: '2021-01-01T00:00:00.000Z' })
  const recent = await create(t, key, { title: 'Recent', status: 'published', published_at: '2024-01-01T00:00:00.000Z' })
  const now = await create(t, key, { title: 'Now', status: 'published' })
  await create(t, key, { title: 'Draft' })
  await create(t, key, { title: 'Scheduled', status: 'scheduled', published_at: new Date(Date.now() + 3_600_000).toISOString() })

  const res = await list(t, key)
  t.equal(res.status, 200)
  t.strictSame(res.json.data.map((e: { id: string }) => e.id), [now.id, recent.id, old.id], 'an entry published now is in the very next list')
  t.strictSame(res.json.data[0], now, 'the records are the ones created')
  t.strictSame(res.json.pagination, { limit: 20, offset: 0, has_more: false, next_cursor: null })
})

t.test('entries published at the same time are ordered by id, descending', async (t) => {
  const { key } = await createProject()
  const at = '2025-05-05T05:05:05.005Z'
  const ids: string[] = []
  for (let i = 0; i < 4; i++) ids.push((await create(t, key, { title: `E${i}`, status: 'published', published_at: at })).id)
  const res = await list(t, key)
  t.strictSame(res.json.data.map((e: { id: string }) => e.id), [...ids].sort().reverse())
})

t.test('limit and offset page through the list; has_more says whether a further page exists', async (t) => {
  const { key } = await createProject()
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.unshift((await create(t, key, { title: `E${i}`, status: 'published', published_at: `2025-01-0${i + 1}T00:00:00.000Z` })).id)

  const first = await list(t, key, '?limit=2')
  t.strictSame(first.json.data.map((e: { id: string }) => e.id), ids.slice(0, 2))
  t.match(first.json.pagination, { limit: 2, offset: 0, has_more: true, next_cursor: String })

  const second = await list(t, key, '?limit=2&offset=2')
  t.strictSame(second.json.data.map((e: { id: string }) => e.id), ids.slice(2))
  t.strictSame(second.json.pagination, { limit: 2, offset: 2, has_more: false, next_cursor: null })

  const exact = await list(t, key, '?limit=3')
  t.equal(exact.json.data.length, 3)
  t.equal(exact.json.pagination.has_more, false, 'a page that ends exactly at the last entry has no more')

  const beyond = await list(t, key, '?offset=10')
  t.strictSame(beyond.json.data, [])
})

t.test('the default page is 20 entries', async (t) => {
  const { key } = await createProject()
  for (let i = 0; i < 21; i++) await create(t, key, { title: `E${i}`, status: 'published', published_at: '2025-01-01T00:00:00.000Z' })
  const res = await list(t, key)
  t.equal(res.json.data.length, 20)
  t.match(res.json.pagination, { limit: 20, offset: 0, has_more: true, next_cursor: String })
})

t.test('limit and offset out of range are 400', async (t) => {
  const { key } = await createProject()
  for (const query of ['?limit=0', '?limit=101', '?limit=2.5', '?offset=-1', '?offset=1000001', '?status=archived', '?status=Published', '?Locale=en', '?locale=english']) {
    const res = await list(t, key, query)
    t.equal(res.status, 400, query)
  }
})

t.test("another project's entries never appear", async (t) => {
  const mine = await createProject()
  const theirs = await createProject()
  await create(t, theirs.key, { title: 'Theirs', status: 'published' })
  const res = await list(t, mine.key)
  t.strictSame(res.json.data, [])
})

t.test('reads work on the free plan; a key is required', async (t) => {
  const free = await createProject({ plan: 'free', beta: false })
  t.equal((await list(t, free.key)).status, 200)
  const res = await list(t, undefined)
  t.equal(res.status, 401)
  t.equal(res.json.code, 'unauthorized')
})

t.test('the list query is served by changelog_entries_project_published_idx, sorting no more than the page', async (t) => {
  const { id: projectId, key } = await createProject()
  for (let i = 0; i < 3; i++) await create(t, key, { title: `E${i}`, status: 'published', published_at: '2025-01-01T00:00:00.000Z' })
  const { db } = await testDatabase()
  const repo = makeRepos(db).changelog
  const after = { at: new Date('2025-01-01T00:00:00.000Z'), id: 'ch_zzzzzzzzzzzzzzzzzzzzz' }

  // By the project's id (the portal), and by the API key itself (GET /v1/changelog).
  for (const scope of [projectId, { keyHash: hashApiKey(key), beta: false }]) {
    for (const locale of [undefined, 'pt-BR']) {
      for (const position of [{ offset: 0 }, { offset: 10000 }, { offset: 0, after }]) {
        const what = `${typeof scope === 'string' ? 'by id' : 'by key'}, locale ${locale}, ${position.after ? 'cursor' : `offset ${position.offset}`}`
        const plan = await explainPlan(repo.listQuery(scope, { locale, limit: 20, ...position }))
        t.match(plan, /Index (Only )?Scan using changelog_entries_project_published_idx/, `uses the index (${what})`)
        t.notOk(sortsBeyondAPage(plan), `sorts only the page (${what})`)
        if (position.after) t.match(plan, /Index Cond: .*ROW\(published_at, id\) < ROW\(/, `the cursor is an index condition, not a filter (${what})`)
        if (typeof scope !== 'string') t.match(plan, /Index Scan using api_keys_key_hash_key/, `the key is found by its index (${what})`)
      }
    }
  }
})

t.test('a page reads the same entries by either plan, on both sides of the depth where list() changes plan', async (t) => {
  const { id: projectId, key } = await createProject()
  const { db } = await testDatabase()
  const repo = makeRepos(db).changelog
  // Enough entries to page past DIRECT_MAX_OFFSET; a few share a timestamp (ordered by id), a few
  // are labelled, a few translated, one is a draft and one scheduled (neither in the list).
  const count = DIRECT_MAX_OFFSET + 6
  // Ids of the API's shape, unique to this run (ids are unique across projects).
  const run = randomBytes(8).toString('hex').replace(/[^a-z]/g, 'x').slice(0, 5)
  const entryId = (i: number) => `ch_${run}${String(i).padStart(16, '0')}`
  // Entry i's timestamp steps back every three entries; in one step the highest id comes first.
  const atPosition = (p: number) => 3 * Math.floor(p / 3) + 2 - (p % 3)
  const translated = [1, DIRECT_MAX_OFFSET, DIRECT_MAX_OFFSET + 2].map(atPosition)
  const at = (i: number) => new Date(Date.UTC(2025, 0, 1) - Math.floor(i / 3) * 60_000)
  await db.insert(changelog_entries).values([
    ...Array.from({ length: count }, (_, i) => ({
      id: entryId(i),
      project_id: projectId,
      title: `E${i}`,
      body: `Body ${i}`,
      body_html: `<p>Body ${i}</p>\n`,
      labels: i % 4 === 0 ? ['new'] : [],
      locale: 'en',
      published_at: at(i),
    })),
    { id: `ch_${run}draft00000000000`, project_id: projectId, title: 'Draft', published_at: null },
    { id: `ch_${run}later00000000000`, project_id: projectId, title: 'Later', published_at: new Date(Date.now() + 3_600_000) },
  ])
  await db.insert(changelog_translations).values(
    translated.map((i) => ({
      entry_id: entryId(i),
      locale_key: 'pt-br',
      locale: 'pt-BR',
      title: `T${i}`,
      body: `Corpo ${i}`,
    })),
  )

  const scope = { keyHash: hashApiKey(key), beta: false }
  for (const label of [undefined, 'new']) {
    for (const locale of [undefined, 'pt-BR']) {
      for (const offset of [0, 1, DIRECT_MAX_OFFSET - 1, DIRECT_MAX_OFFSET, DIRECT_MAX_OFFSET + 1, DIRECT_MAX_OFFSET + 3]) {
        const options = { label, locale, limit: 4, offset }
        const what = `label ${label}, locale ${locale}, offset ${offset}`
        const direct = await repo.listQuery(scope, options, 'direct')
        const deferred = await repo.listQuery(scope, options, 'deferred')
        t.strictSame(direct, deferred, `the same rows by both plans (${what})`)
        const { entries } = await repo.list(scope, options, () => {})
        t.strictSame(
          entries.map((e) => [e.id, e.title, e.locale]),
          direct.slice(0, 4).map((e) => [e.id, e.title, e.locale]),
          `list() returns them (${what})`,
        )
      }
    }
  }
  // Spelled out once: past the switch, the translated entry keeps its translation.
  const deep = await list(t, key, `?limit=3&offset=${DIRECT_MAX_OFFSET}&locale=pt-BR`)
  t.strictSame(
    deep.json.data.map((e: { title: string; locale: string }) => `${e.title} ${e.locale}`),
    [0, 1, 2].map((k) => atPosition(DIRECT_MAX_OFFSET + k)).map((i) => (translated.includes(i) ? `T${i} pt-BR` : `E${i} en`)),
  )
  t.equal(deep.json.pagination.has_more, true)
})
