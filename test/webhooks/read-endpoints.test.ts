// GET /v1/webhook-endpoints and GET /v1/webhook-endpoints/{id}: newest first, paged by offset and
// by cursor, never a secret; another project's or a malformed id is a 404; reads on every plan.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { walkPages } from '../helpers/pages.js'
import { createEndpoint, setEndpoint } from './helpers.js'

t.test('get: the record without a secret, with an ETag; 304 while unchanged', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key, { events: ['beta_tester.joined'], description: 'CRM' })
  const res = await call(t, app, { url: created.url, key })
  t.equal(res.status, 200)
  t.same(res.json, { data: created.data })
  t.notOk(res.raw.includes(created.secret), 'no secret in the answer')
  t.notOk(res.raw.includes('whsec_'))
  const etag = res.headers.etag as string
  t.match(etag, /^"[A-Za-z0-9_-]{27}"$/)
  t.equal((await call(t, app, { url: created.url, key, headers: { 'if-none-match': etag } })).status, 304)
})

t.test('list: newest first, paged by offset and by cursor, never a secret', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = []
  for (let i = 0; i < 5; i++) created.push(await createEndpoint(t, app, key, { description: `endpoint ${i}` }))
  const all = await call(t, app, { url: '/v1/webhook-endpoints', key })
  const newestFirst: string[] = all.json.data.map((e: { id: string }) => e.id)
  t.same([...newestFirst].sort(), created.map((c) => c.id).sort(), 'every endpoint')
  const times: string[] = all.json.data.map((e: { created_at: string }) => e.created_at)
  t.same(times, [...times].sort().reverse(), 'newest first')
  t.same(all.json.pagination, { limit: 25, offset: 0, has_more: false, next_cursor: null })
  for (const { secret } of created) t.notOk(all.raw.includes(secret), 'no secret listed')

  const second = await call(t, app, { url: '/v1/webhook-endpoints?limit=2&offset=2', key })
  t.same(second.json.data.map((e: { id: string }) => e.id), newestFirst.slice(2, 4))
  t.equal(second.json.pagination.has_more, true)

  t.same(await walkPages(t, app, key, '/v1/webhook-endpoints', 2), newestFirst, 'the cursor walks every endpoint once, in order')

  for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'cursor=nope', 'status=pending', 'limit=2&offset=2&cursor=x']) {
    const res = await call(t, app, { url: `/v1/webhook-endpoints?${bad}`, key })
    t.same([res.status, res.json.code], [400, 'validation_failed'], bad)
  }
})

t.test("another project's endpoint, a malformed or missing id: 404, and lists never cross projects", async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  const ofA = await createEndpoint(t, app, a.key)
  for (const id of [ofA.id, 'we_000000000000000000000', 'bp_000000000000000000000', 'nope', 'we_short']) {
    const res = await call(t, app, { url: `/v1/webhook-endpoints/${id}`, key: b.key })
    t.same([res.status, res.json.code], [404, 'not_found'], id)
  }
  t.same((await call(t, app, { url: '/v1/webhook-endpoints', key: b.key })).json.data, [])
})

t.test('a disabled endpoint shows why', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  const before = await call(t, app, { url: created.url, key })
  await setEndpoint(created.id, { enabled: false, disabled_reason: 'gone' })
  const res = await call(t, app, { url: created.url, key })
  t.same([res.json.data.enabled, res.json.data.disabled_reason], [false, 'gone'])
  t.not(res.headers.etag, before.headers.etag, 'a new ETag')
})
