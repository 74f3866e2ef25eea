import t, { type Test } from 'tap'
import { beta_testers } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { newTesterToken } from '../../src/domain/secrets.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

type Status = 'invited' | 'joined' | 'declined' | 'revoked'

async function insertTesters(programId: string, rows: Array<{ email: string; invited_at: Date; status?: Status }>) {
  const { db } = await testDatabase()
  const inserted = rows.map((r) => ({ id: newId('bt'), beta_program_id: programId, token: newTesterToken(), ...r }))
  await db.insert(beta_testers).values(inserted)
  return inserted
}

async function setup(t: Test) {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Roster' } })
  const programId = res.json.data.id as string
  return { app, key, programId, url: `/v1/beta/programs/${programId}/testers` }
}

const ids = (res: { json: { data: Array<{ id: string }> } }) => res.json.data.map((x) => x.id)

t.test('GET …/testers lists most recently invited first, ties broken by id desc', async (t) => {
  const { app, key, programId, url } = await setup(t)
  const same = new Date('2026-05-02T00:00:00.000Z')
  const rows = await insertTesters(programId, [
    { email: 'old@example.com', invited_at: new Date('2026-05-01T00:00:00.000Z') },
    { email: 'tie1@example.com', invited_at: same },
    { email: 'tie2@example.com', invited_at: same },
    { email: 'tie3@example.com', invited_at: same },
    { email: 'new@example.com', invited_at: new Date('2026-05-03T00:00:00.000Z') },
  ])
  const ties = rows.filter((r) => r.invited_at === same).map((r) => r.id).sort().reverse()
  const res = await call(t, app, { url, key })
  t.equal(res.status, 200)
  t.same(ids(res), [rows[4]!.id, ...ties, rows[0]!.id])
  t.same(res.json.pagination, { limit: 25, offset: 0, has_more: false, next_cursor: null })
})

t.test('testers enrolled through the API come back newest first, as enrolled', async (t) => {
  const { app, key, url } = await setup(t)
  const enrolled: unknown[] = []
  for (const email of ['a@example.com', 'b@example.com']) {
    enrolled.push((await call(t, app, { method: 'POST', url, key, body: { email } })).json.data)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const res = await call(t, app, { url, key })
  t.same(res.json.data, enrolled.reverse())
})

t.test('an empty roster is an empty page', async (t) => {
  const { app, key, url } = await setup(t)
  const res = await call(t, app, { url, key })
  t.same(res.json, { data: [], pagination: { limit: 25, offset: 0, has_more: false, next_cursor: null } })
})

t.test('the list holds only that program testers', async (t) => {
  const { app, key, url } = await setup(t)
  const other = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Other' } })).json.data.id
  await call(t, app, { method: 'POST', url, key, body: { email: 'mine@example.com' } })
  await call(t, app, { method: 'POST', url: `/v1/beta/programs/${other}/testers`, key, body: { email: 'theirs@example.com' } })
  const res = await call(t, app, { url, key })
  t.same(
    res.json.data.map((x: { email: string }) => x.email),
    ['mine@example.com'],
  )
})

t.test('status filters the list and combines with pagination', async (t) => {
  const { app, key, programId, url } = await setup(t)
  const base = Date.parse('2026-06-01T00:00:00.000Z')
  const statuses: Status[] = ['invited', 'joined', 'declined', 'revoked', 'joined', 'joined']
  const rows = await insertTesters(
    programId,
    statuses.map((status, i) => ({ email: `t${i}@example.com`, status, invited_at: new Date(base + i * 1000) })),
  )
  for (const status of ['invited', 'declined', 'revoked'] as const) {
    const res = await call(t, app, { url: `${url}?status=${status}`, key })
    t.same(ids(res), rows.filter((r) => r.status === status).map((r) => r.id), status)
  }
  const joined = rows.filter((r) => r.status === 'joined').map((r) => r.id).reverse()
  const first = await call(t, app, { url: `${url}?status=joined&limit=2`, key })
  t.same(ids(first), joined.slice(0, 2))
  t.match(first.json.pagination, { limit: 2, offset: 0, has_more: true, next_cursor: String })
  const second = await call(t, app, { url: `${url}?status=joined&limit=2&offset=2`, key })
  t.same(ids(second), joined.slice(2))
  t.same(second.json.pagination, { limit: 2, offset: 2, has_more: false, next_cursor: null })
})

t.test('has_more is exact at the page boundary', async (t) => {
  const { app, key, programId, url } = await setup(t)
  const base = Date.parse('2026-07-01T00:00:00.000Z')
  const rows = await insertTesters(
    programId,
    Array.from({ length: 4 }, (_, i) => ({ email: `p${i}@example.com`, invited_at: new Date(base + i * 1000) })),
  )
  const newestFirst = rows.map((r) => r.id).reverse()
  const exact = await call(t, app, { url: `${url}?limit=4`, key })
  t.same(ids(exact), newestFirst)
  t.equal(exact.json.pagination.has_more, false, 'a page of exactly all rows')
  const short = await call(t, app, { url: `${url}?limit=3`, key })
  t.same(ids(short), newestFirst.slice(0, 3))
  t.equal(short.json.pagination.has_more, true, 'one row left over')
  const tail = await call(t, app, { url: `${url}?limit=3&offset=3`, key })
  t.same(ids(tail), newestFirst.slice(3))
  t.same(tail.json.pagination, { limit: 3, offset: 3, has_more: false, next_cursor: null })
})

t.test('an unknown, foreign or malformed program is 404', async (t) => {
  const { app, url } = await setup(t)
  const other = await createProject()
  t.equal((await call(t, app, { url, key: other.key })).status, 404, 'another project')
  for (const id of ['bp_AAAAAAAAAAAAAAAAAAAAA', 'bt_AAAAAAAAAAAAAAAAAAAAA', 'zzz']) {
    const res = await call(t, app, { url: `/v1/beta/programs/${id}/testers`, key: other.key })
    t.equal(res.status, 404, id)
    t.equal(res.json.code, 'not_found')
  }
})

t.test('bad query parameters are 400, before 404', async (t) => {
  const { app, key, url } = await setup(t)
  for (const query of ['status=active', 'status=Joined', 'limit=0', 'limit=101', 'offset=-1', 'offset=x', 'page=2']) {
    for (const target of [url, '/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA/testers']) {
      const res = await call(t, app, { url: `${target}?${query}`, key })
      t.equal(res.status, 400, `${query} on ${target}`)
    }
  }
})
