import t from 'tap'
import { beta_programs } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const URL = '/v1/beta/programs'

async function insertPrograms(projectId: string, rows: Array<{ name: string; created_at: Date; status?: 'draft' | 'active' | 'closed' }>) {
  const { db } = await testDatabase()
  const inserted = rows.map((r, i) => ({ id: newId('bp'), project_id: projectId, slug: `p-${i}`, ...r }))
  await db.insert(beta_programs).values(inserted)
  return inserted
}

t.test('GET /v1/beta/programs lists newest first, ties broken by id desc', async (t) => {
  const app = await testApp()
  const { id, key } = await createProject()
  const same = new Date('2026-01-02T00:00:00.000Z')
  const rows = await insertPrograms(id, [
    { name: 'old', created_at: new Date('2026-01-01T00:00:00.000Z') },
    { name: 'tie a', created_at: same },
    { name: 'tie b', created_at: same },
    { name: 'tie c', created_at: same },
    { name: 'new', created_at: new Date('2026-01-03T00:00:00.000Z') },
  ])
  const ties = rows.filter((r) => r.created_at === same).map((r) => r.id).sort().reverse()
  const res = await call(t, app, { url: URL, key })
  t.equal(res.status, 200)
  t.same(
    res.json.data.map((p: { id: string }) => p.id),
    [rows[4]!.id, ...ties, rows[0]!.id],
  )
  t.same(res.json.pagination, { limit: 25, offset: 0, has_more: false, next_cursor: null })
})

t.test('programs made through the API come back newest first', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const ids: string[] = []
  for (const name of ['one', 'two', 'three']) {
    const res = await call(t, app, { method: 'POST', url: URL, key, body: { name } })
    ids.push(res.json.data.id)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const res = await call(t, app, { url: URL, key })
  t.same(
    res.json.data.map((p: { id: string }) => p.id),
    ids.reverse(),
  )
})

t.test('an empty project lists nothing', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { url: URL, key })
  t.same(res.json, { data: [], pagination: { limit: 25, offset: 0, has_more: false, next_cursor: null } })
})

t.test('the list holds only the caller project programs', async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  await call(t, app, { method: 'POST', url: URL, key: a.key, body: { name: 'A' } })
  await call(t, app, { method: 'POST', url: URL, key: b.key, body: { name: 'B' } })
  const res = await call(t, app, { url: URL, key: a.key })
  t.same(
    res.json.data.map((p: { name: string }) => p.name),
    ['A'],
  )
})

t.test('status filters the list', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const status of ['draft', 'active', 'active', 'closed']) {
    await call(t, app, { method: 'POST', url: URL, key, body: { name: status, status } })
  }
  for (const [status, count] of [['draft', 1], ['active', 2], ['closed', 1]] as const) {
    const res = await call(t, app, { url: `${URL}?status=${status}`, key })
    t.equal(res.json.data.length, count, status)
    t.ok(res.json.data.every((p: { status: string }) => p.status === status))
  }
})

t.test('has_more is exact at the page boundary', async (t) => {
  const app = await testApp()
  const { id, key } = await createProject()
  const base = Date.parse('2026-03-01T00:00:00.000Z')
  const rows = await insertPrograms(
    id,
    Array.from({ length: 5 }, (_, i) => ({ name: `p${i}`, created_at: new Date(base + i * 1000) })),
  )
  const newestFirst = rows.map((r) => r.id).reverse()
  const get = async (query: string) => (await call(t, app, { url: `${URL}?${query}`, key })).json

  const all = await get('limit=5')
  t.same(all.data.map((p: { id: string }) => p.id), newestFirst)
  t.same(all.pagination, { limit: 5, offset: 0, has_more: false, next_cursor: null }, 'a page of exactly all rows: no more')
  t.match((await get('limit=4')).pagination, { limit: 4, offset: 0, has_more: true, next_cursor: String }, 'one row left over')
  t.same((await get('limit=2&offset=3')).pagination, { limit: 2, offset: 3, has_more: false, next_cursor: null }, 'the last page, full')
  t.match((await get('limit=2&offset=2')).pagination, { limit: 2, offset: 2, has_more: true, next_cursor: String })
  t.same((await get('limit=2&offset=2')).data.map((p: { id: string }) => p.id), newestFirst.slice(2, 4))
  t.same(await get('offset=5'), { data: [], pagination: { limit: 25, offset: 5, has_more: false, next_cursor: null } }, 'past the end')
  t.same((await get('limit=1')).data.map((p: { id: string }) => p.id), [newestFirst[0]])
})

t.test('the status filter and pagination combine', async (t) => {
  const app = await testApp()
  const { id, key } = await createProject()
  const base = Date.parse('2026-04-01T00:00:00.000Z')
  await insertPrograms(
    id,
    Array.from({ length: 6 }, (_, i) => ({ name: `p${i}`, created_at: new Date(base + i * 1000), status: i % 2 ? ('active' as const) : ('draft' as const) })),
  )
  const res = await call(t, app, { url: `${URL}?status=active&limit=2`, key })
  t.same(res.json.data.map((p: { name: string }) => p.name), ['p5', 'p3'])
  t.match(res.json.pagination, { limit: 2, offset: 0, has_more: true, next_cursor: String })
  const last = await call(t, app, { url: `${URL}?status=active&limit=2&offset=2`, key })
  t.same(last.json.data.map((p: { name: string }) => p.name), ['p1'])
  t.equal(last.json.pagination.has_more, false)
})

t.test('bad query parameters are 400', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const query of ['status=open', 'status=Active', 'limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'offset=-1', 'offset=1000001', 'Limit=5', 'sort=name', 'limit=1e309']) {
    const res = await call(t, app, { url: `${URL}?${query}`, key })
    t.equal(res.status, 400, query)
    t.equal(res.json.code, 'validation_failed', query)
  }
  const edges = await call(t, app, { url: `${URL}?limit=100&offset=1000000`, key })
  t.equal(edges.status, 200)
  t.same(edges.json.pagination, { limit: 100, offset: 1000000, has_more: false, next_cursor: null })
})
