import t from 'tap'
import { ADMIN_TOKEN, call, testApp } from '../helpers/app.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

t.test('POST /admin/v1/projects creates a free project without beta and shows its key once', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: '  Acme  ' } })
  t.equal(res.status, 201)
  t.match(res.json.data, { name: 'Acme', plan: 'free', beta_enabled: false })
  t.match(res.json.api_key, /^fbk_[A-Za-z0-9_-]{40}$/)
  t.equal(res.headers.location, `/admin/v1/projects/${res.json.data.id}`)

  const read = await call(t, app, { url: `/admin/v1/projects/${res.json.data.id}`, headers: admin })
  t.same(read.json.data, res.json.data)
  t.notOk(read.raw.includes(res.json.api_key), 'the key is never shown again')

  const withKey = await call(t, app, { url: '/v1/changelog', key: res.json.api_key })
  t.equal(withKey.status, 200, 'the new key works at once')
})

t.test('POST /admin/v1/projects takes plan and beta_enabled and refuses unknown fields', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Pro', plan: 'pro', beta_enabled: true } })
  t.match(res.json.data, { plan: 'pro', beta_enabled: true })
  const bad = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'X', plan: 'enterprise' } })
  t.equal(bad.status, 400)
  const unknown = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'X', id: 'prj_x' } })
  t.equal(unknown.status, 400)
  t.same(unknown.json.errors, [{ in: 'body', path: '/id', message: 'is not a field of this operation; its fields are: name, plan, beta_enabled' }])
})

t.test('PATCH /admin/v1/projects/:id changes the plan and the beta feature for the very next request', async (t) => {
  const app = await testApp()
  const created = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Gate' } })
  const { id } = created.json.data
  const key = created.json.api_key as string

  const denied = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'x' } })
  t.equal(denied.json.code, 'plan_required')
  const betaDenied = await call(t, app, { url: '/v1/beta/programs', key })
  t.equal(betaDenied.json.code, 'beta_disabled')

  const patched = await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${id}`, headers: admin, body: { plan: 'pro', beta_enabled: true } })
  t.equal(patched.status, 200)
  t.match(patched.json.data, { plan: 'pro', beta_enabled: true, name: 'Gate' })

  const allowed = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'x' } })
  t.not(allowed.json?.code, 'plan_required', 'the upgrade applies to the next request')
  const betaAllowed = await call(t, app, { url: '/v1/beta/programs', key })
  t.not(betaAllowed.json?.code, 'beta_disabled')

  await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${id}`, headers: admin, body: { plan: 'free' } })
  const downgraded = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'x' } })
  t.equal(downgraded.json.code, 'plan_required', 'the downgrade applies to the next request')

  const empty = await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${id}`, headers: admin, body: {} })
  t.equal(empty.status, 200)
  t.match(empty.json.data, { plan: 'free', beta_enabled: true })
})

t.test('unknown or malformed project ids are 404', async (t) => {
  const app = await testApp()
  for (const id of ['prj_000000000000000000000', 'nope', 'bp_000000000000000000000', 'prj_%00']) {
    const res = await call(t, app, { url: `/admin/v1/projects/${id}`, headers: admin })
    t.equal(res.status, 404, id)
    t.equal(res.json.code, 'not_found')
  }
  const patch = await call(t, app, { method: 'PATCH', url: '/admin/v1/projects/prj_000000000000000000000', headers: admin, body: { plan: 'pro' } })
  t.equal(patch.status, 404)
  const key = await call(t, app, { method: 'POST', url: '/admin/v1/projects/prj_000000000000000000000/api-keys', headers: admin })
  t.equal(key.status, 404)
})

t.test('API keys: issue another, revoke one, and the revoked key is 401 at once', async (t) => {
  const app = await testApp()
  const created = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Keys' } })
  const { id } = created.json.data
  const first = created.json.api_key as string

  const issued = await call(t, app, { method: 'POST', url: `/admin/v1/projects/${id}/api-keys`, headers: admin })
  t.equal(issued.status, 201)
  const second = issued.json.api_key as string
  t.not(second, first)
  t.equal(issued.json.data.prefix, second.slice(0, 8))
  t.equal(issued.headers.location, `/admin/v1/projects/${id}/api-keys/${issued.json.data.id}`)

  t.equal((await call(t, app, { url: '/v1/changelog', key: second })).status, 200)
  const revoked = await call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${id}/api-keys/${issued.json.data.id}`, headers: admin })
  t.equal(revoked.status, 204)
  t.equal(revoked.raw, '')
  const after = await call(t, app, { url: '/v1/changelog', key: second })
  t.equal(after.status, 401)
  t.equal(after.json.code, 'unauthorized')
  t.equal((await call(t, app, { url: '/v1/changelog', key: first })).status, 200, 'the other key still works')

  const again = await call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${id}/api-keys/${issued.json.data.id}`, headers: admin })
  t.equal(again.status, 204, 'revoking twice is fine')

  const other = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Other' } })
  const foreign = await call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${other.json.data.id}/api-keys/${issued.json.data.id}`, headers: admin })
  t.equal(foreign.status, 404, "another project's key id is not found")
  const malformed = await call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${id}/api-keys/nope`, headers: admin })
  t.equal(malformed.status, 404)
})

t.test('the operator API needs the admin token, compared exactly', async (t) => {
  const app = await testApp()
  for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: `Bearer ${ADMIN_TOKEN}x` }, { authorization: ADMIN_TOKEN }]) {
    const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers, body: { name: 'x' } })
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], 'Bearer')
  }
  const apiKey = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'k' } })
  const withProjectKey = await call(t, app, { url: `/admin/v1/projects/${apiKey.json.data.id}`, key: apiKey.json.api_key })
  t.equal(withProjectKey.status, 401, 'a project API key is not an admin token')
})

t.test('without ADMIN_TOKEN the operator API does not exist', async (t) => {
  const app = await testApp({ adminToken: undefined })
  const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'x' } })
  t.equal(res.status, 404)
  t.equal(res.json.code, 'not_found')
  // Nor do its methods: a 405 with Allow would tell the operator API is there, and how it is used.
  for (const [method, url] of [
    ['PUT', '/admin/v1/projects'],
    ['DELETE', '/admin/v1/projects/prj_000000000000000000000'],
    ['OPTIONS', '/admin/v1/projects'],
    ['POST', '/admin/v1/projects/prj_000000000000000000000/api-keys/key_000000000000000000000'],
    ['POST', '/metrics'],
  ] as const) {
    const wrong = await call(t, app, { method, url, headers: admin })
    t.same([wrong.status, wrong.json.code, wrong.headers.allow], [404, 'not_found', undefined], `${method} ${url}`)
  }
  const on = await testApp()
  t.equal((await call(t, on, { method: 'PUT', url: '/admin/v1/projects', headers: admin })).headers.allow, 'GET, POST, HEAD', 'with ADMIN_TOKEN, the same request is a 405')
})

t.test('GET /admin/v1/projects lists every project, newest first, by offset and by cursor', async (t) => {
  const app = await testApp()
  const ours: string[] = []
  for (const name of ['List A', 'List B', 'List C']) {
    ours.unshift((await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name } })).json.data.id)
  }
  // Other test files may add projects meanwhile (on PostgreSQL the database is shared): walk the
  // list by cursor, two a page, until ours have all gone by.
  const seen: { id: string; created_at: string }[] = []
  let cursor: string | null = null
  let offset = 0
  do {
    const res = await call(t, app, { url: `/admin/v1/projects?limit=2${cursor ? `&cursor=${cursor}` : ''}`, headers: admin })
    t.equal(res.status, 200)
    t.equal(res.json.pagination.offset, offset, 'the page says how many rows came before it')
    offset += res.json.data.length
    seen.push(...res.json.data)
    cursor = res.json.pagination.next_cursor
  } while (cursor && !ours.every((id) => seen.some((p) => p.id === id)))
  const ids = seen.map((p) => p.id)
  t.equal(new Set(ids).size, ids.length, 'no project twice')
  t.same(ids.filter((id) => ours.includes(id)), ours, 'ours, newest first')
  for (let i = 1; i < seen.length; i++) {
    const [a, b] = [seen[i - 1]!, seen[i]!]
    t.ok(a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id), 'created_at desc, id desc')
  }

  const byOffset = await call(t, app, { url: `/admin/v1/projects?limit=1&offset=${ids.indexOf(ours[1]!)}`, headers: admin })
  t.ok(byOffset.json.data.length === 1 && typeof byOffset.json.pagination.has_more === 'boolean')
  for (const query of ['limit=0', 'limit=101', 'offset=-1', 'cursor=nope', 'cursor=x&offset=0', 'status=x']) {
    const res = await call(t, app, { url: `/admin/v1/projects?${query}`, headers: admin })
    t.same([res.status, res.json.code], [400, 'validation_failed'], query)
  }
  t.equal((await call(t, app, { url: '/admin/v1/projects' })).status, 401, 'needs the admin token')
})
