// GET …/feedback and GET …/feedback/{id}: what testers wrote, read by the team.
import t, { type Test } from 'tap'
import { beta_feedback } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

async function setup(t: Test) {
  const app = await testApp()
  const project = await createProject()
  const program = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: project.key, body: { name: 'Feedback', status: 'active' } })).json.data
  const testers: string[] = []
  for (const email of ['ada@example.com', 'grace@example.com']) {
    testers.push((await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.id}/testers`, key: project.key, body: { email } })).json.data.id)
  }
  return { app, project, key: project.key, programId: program.id as string, testers, url: `/v1/beta/programs/${program.id}/feedback` }
}

/** Feedback as the portal writes it, at chosen times. */
async function insertFeedback(projectId: string, programId: string, rows: Array<{ tester: string; at: Date; body?: string; rating?: number | null }>) {
  const { db } = await testDatabase()
  const values = rows.map((r) => ({
    id: newId('fb'),
    project_id: projectId,
    beta_program_id: programId,
    beta_tester_id: r.tester,
    body: r.body ?? 'Looks good',
    rating: r.rating === undefined ? 4 : r.rating,
    created_at: r.at,
  }))
  await db.insert(beta_feedback).values(values)
  return values
}

const ids = (res: { json: { data: Array<{ id: string }> } }) => res.json.data.map((x) => x.id)

t.test('the list is newest first, ties broken by id desc, every field present', async (t) => {
  const { app, project, key, programId, testers, url } = await setup(t)
  const same = new Date('2026-11-23T08:00:00.000Z')
  const rows = await insertFeedback(project.id, programId, [
    { tester: testers[0]!, at: new Date('2026-11-22T08:00:00.000Z'), body: 'first\nwith a line break', rating: null },
    { tester: testers[1]!, at: same },
    { tester: testers[0]!, at: same },
    { tester: testers[1]!, at: new Date('2026-11-24T08:00:00.000Z'), rating: 1 },
  ])
  const ties = [rows[1]!.id, rows[2]!.id].sort().reverse()
  const res = await call(t, app, { url, key })
  t.equal(res.status, 200)
  t.same(ids(res), [rows[3]!.id, ...ties, rows[0]!.id])
  t.same(res.json.pagination, { limit: 25, offset: 0, has_more: false, next_cursor: null })
  t.same(res.json.data[3], {
    id: rows[0]!.id,
    beta_program_id: programId,
    beta_tester_id: testers[0],
    body: 'first\nwith a line break',
    rating: null,
    created_at: '2026-11-22T08:00:00.000Z',
  })
})

t.test('tester_id keeps one tester’s feedback; another program’s tester gives an empty page', async (t) => {
  const { app, project, key, programId, testers, url } = await setup(t)
  const rows = await insertFeedback(project.id, programId, [
    { tester: testers[0]!, at: new Date('2026-11-22T08:00:00.000Z') },
    { tester: testers[1]!, at: new Date('2026-11-22T09:00:00.000Z') },
    { tester: testers[0]!, at: new Date('2026-11-22T10:00:00.000Z') },
  ])
  const res = await call(t, app, { url: `${url}?tester_id=${testers[0]}`, key })
  t.equal(res.status, 200)
  t.same(ids(res), [rows[2]!.id, rows[0]!.id])
  const stranger = await call(t, app, { url: `${url}?tester_id=bt_AAAAAAAAAAAAAAAAAAAAA`, key })
  t.same(stranger.json.data, [])
})

t.test('limit and offset page through the list; has_more says whether a page follows', async (t) => {
  const { app, project, key, programId, testers, url } = await setup(t)
  const rows = await insertFeedback(
    project.id,
    programId,
    Array.from({ length: 5 }, (_, i) => ({ tester: testers[i % 2]!, at: new Date(Date.UTC(2026, 10, 22, i)) })),
  )
  const newestFirst = rows.map((r) => r.id).reverse()
  const first = await call(t, app, { url: `${url}?limit=2`, key })
  t.same(ids(first), newestFirst.slice(0, 2))
  t.same(first.json.pagination, { limit: 2, offset: 0, has_more: true, next_cursor: first.json.pagination.next_cursor })
  const last = await call(t, app, { url: `${url}?limit=2&offset=4`, key })
  t.same(ids(last), newestFirst.slice(4))
  t.same(last.json.pagination, { limit: 2, offset: 4, has_more: false, next_cursor: null })
  const exact = await call(t, app, { url: `${url}?limit=5`, key })
  t.equal(exact.json.pagination.has_more, false, 'a full last page has no more')
  const beyond = await call(t, app, { url: `${url}?offset=10`, key })
  t.same(beyond.json, { data: [], pagination: { limit: 25, offset: 10, has_more: false, next_cursor: null } })
})

t.test('bad query values and unknown parameters are 400', async (t) => {
  const { app, key, url } = await setup(t)
  for (const query of ['limit=0', 'limit=101', 'limit=x', 'offset=-1', 'offset=1000001', 'tester_id=nope', 'tester_id=bp_AAAAAAAAAAAAAAAAAAAAA', 'status=joined', 'testerId=bt_AAAAAAAAAAAAAAAAAAAAA']) {
    const res = await call(t, app, { url: `${url}?${query}`, key })
    t.equal(res.status, 400, query)
    t.equal(res.json.code, 'validation_failed')
  }
})

t.test('an unknown, malformed or foreign program is 404', async (t) => {
  const { app, url } = await setup(t)
  const other = await createProject()
  const { key } = await createProject()
  for (const path of ['/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA/feedback', '/v1/beta/programs/nope/feedback']) {
    const res = await call(t, app, { url: path, key })
    t.equal(res.status, 404, path)
    t.equal(res.json.code, 'not_found')
  }
  t.equal((await call(t, app, { url, key: other.key })).status, 404, "another project's program")
})

t.test('GET …/feedback/{id} returns one piece; a wrong program, id or project is 404', async (t) => {
  const { app, project, key, programId, testers, url } = await setup(t)
  const [row] = await insertFeedback(project.id, programId, [{ tester: testers[0]!, at: new Date('2026-11-22T08:00:00.000Z'), body: '<b>bold</b> & more', rating: 5 }])
  const res = await call(t, app, { url: `${url}/${row!.id}`, key })
  t.equal(res.status, 200)
  t.same(res.json.data, { id: row!.id, beta_program_id: programId, beta_tester_id: testers[0], body: '<b>bold</b> & more', rating: 5, created_at: '2026-11-22T08:00:00.000Z' })
  t.ok(res.headers.etag)
  const again = await call(t, app, { url: `${url}/${row!.id}`, key, headers: { 'if-none-match': String(res.headers.etag) } })
  t.equal(again.status, 304)

  const otherProgram = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Other' } })).json.data.id
  const other = await createProject()
  for (const [label, path, k] of [
    ['missing id', `${url}/fb_AAAAAAAAAAAAAAAAAAAAA`, key],
    ['malformed id', `${url}/nope`, key],
    ['a tester id', `${url}/${testers[0]}`, key],
    ['another program', `/v1/beta/programs/${otherProgram}/feedback/${row!.id}`, key],
    ['another project', `${url}/${row!.id}`, other.key],
  ] as const) {
    const res404 = await call(t, app, { url: path, key: k })
    t.equal(res404.status, 404, label)
    t.equal(res404.json.code, 'not_found')
  }
})

t.test('deleting a tester, then the program, deletes their feedback', async (t) => {
  const { app, project, key, programId, testers, url } = await setup(t)
  await insertFeedback(project.id, programId, [
    { tester: testers[0]!, at: new Date('2026-11-22T08:00:00.000Z') },
    { tester: testers[1]!, at: new Date('2026-11-22T09:00:00.000Z') },
  ])
  t.equal((await call(t, app, { method: 'DELETE', url: `/v1/beta/programs/${programId}/testers/${testers[0]}`, key })).status, 204)
  const left = await call(t, app, { url, key })
  t.same(left.json.data.map((f: { beta_tester_id: string }) => f.beta_tester_id), [testers[1]])
  t.equal((await call(t, app, { method: 'DELETE', url: `/v1/beta/programs/${programId}`, key })).status, 204)
  t.equal((await call(t, app, { url, key })).status, 404)
})

t.test('next_cursor walks the list page by page; a cursor of another filter is 400', async (t) => {
  const { app, project, key, programId, testers, url } = await setup(t)
  const rows = await insertFeedback(
    project.id,
    programId,
    Array.from({ length: 5 }, (_, i) => ({ tester: testers[0]!, at: new Date(Date.UTC(2026, 10, 22, i)) })),
  )
  const seen: string[] = []
  let next = await call(t, app, { url: `${url}?limit=2`, key })
  for (;;) {
    seen.push(...ids(next))
    const cursor = next.json.pagination.next_cursor
    if (!cursor) break
    next = await call(t, app, { url: `${url}?limit=2&cursor=${encodeURIComponent(cursor)}`, key })
  }
  t.same(seen, rows.map((r) => r.id).reverse())
  const first = await call(t, app, { url: `${url}?limit=2`, key })
  const other = await call(t, app, { url: `${url}?limit=2&tester_id=${testers[0]}&cursor=${encodeURIComponent(first.json.pagination.next_cursor)}`, key })
  t.equal(other.status, 400)
  t.equal(other.json.code, 'validation_failed')
})
