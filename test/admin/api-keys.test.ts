// Keys that rotate (contract §9): every key, the first one included, is a record an operator can
// list, name, expire and revoke; an expired key is refused like a revoked one, on the very next
// request, whichever way the request authenticates.
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { ADMIN_TOKEN, call, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const FUTURE = '2099-06-30T12:00:00+02:00'
/** A key record without last_used_at, which a use records off the request's path, at a moment of its own. */
const withoutLastUse = ({ last_used_at: _, ...rest }: Record<string, unknown>) => rest
const KEY_FIELDS = ['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'prefix', 'revoked_at']

async function project(t: Test, body: object = { name: 'Rotation', plan: 'pro', beta_enabled: true }) {
  const app = await testApp()
  const created = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body })
  const id = created.json.data.id as string
  return {
    app,
    id,
    firstKey: created.json.api_key as string,
    keys: (query = '') => call(t, app, { url: `/admin/v1/projects/${id}/api-keys${query}`, headers: admin }),
    issue: (body?: object) => call(t, app, { method: 'POST', url: `/admin/v1/projects/${id}/api-keys`, headers: admin, ...(body ? { body } : {}) }),
    patch: (keyId: string, body: unknown) => call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${id}/api-keys/${keyId}`, headers: admin, body }),
    get: (keyId: string) => call(t, app, { url: `/admin/v1/projects/${id}/api-keys/${keyId}`, headers: admin }),
    revoke: (keyId: string) => call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${id}/api-keys/${keyId}`, headers: admin }),
  }
}

/** What time passing would do: the key's expiry, set in the database, is now behind the database's clock. */
async function expireNow(keyId: string) {
  await (await testDatabase()).db.execute(sql`update api_keys set expires_at = now() - interval '1 millisecond' where id = ${keyId}`)
}

t.test('the first key is listed with the others, newest first, revoked ones included, and can be revoked', async (t) => {
  const p = await project(t)
  const first = await p.keys()
  t.equal(first.status, 200)
  t.equal(first.json.data.length, 1, 'the key made with the project is in the list')
  const [firstKey] = first.json.data
  t.same(Object.keys(firstKey).sort(), KEY_FIELDS, 'every field of the record')
  t.match(firstKey, { prefix: p.firstKey.slice(0, 8), name: null, expires_at: null, last_used_at: null, revoked_at: null })
  t.notOk(first.raw.includes(p.firstKey), 'the key itself is never shown again')
  t.same(first.json.pagination, { limit: 25, offset: 0, has_more: false, next_cursor: null })

  const second = await p.issue()
  t.equal(second.status, 201, 'a request without a body still issues a key')
  t.same(Object.keys(second.json).sort(), ['api_key', 'data'], 'the answer keeps its shape')
  t.same(Object.keys(second.json.data).sort(), KEY_FIELDS, 'its data is the whole key record')

  // Rotation: the new key works, the first is revoked, and stays listed with revoked_at.
  t.equal((await call(t, p.app, { url: '/v1/changelog', key: second.json.api_key })).status, 200)
  t.equal((await p.revoke(firstKey.id)).status, 204)
  t.equal((await call(t, p.app, { url: '/v1/changelog', key: p.firstKey })).status, 401, 'the first key is refused at once')
  const after = await p.keys()
  t.same(after.json.data.map((k: { id: string }) => k.id), [second.json.data.id, firstKey.id], 'newest first, the revoked key included')
  t.type(after.json.data[1].revoked_at, 'string')
  t.equal(after.json.data[0].revoked_at, null)
})

t.test('the key list pages by offset and by cursor like every list', async (t) => {
  const p = await project(t)
  for (let i = 0; i < 4; i++) t.equal((await p.issue({ name: `key ${i}` })).status, 201)
  const all = (await p.keys()).json.data as { id: string; created_at: string }[]
  t.equal(all.length, 5)
  const order = [...all].sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
  t.same(all.map((k) => k.id), order.map((k) => k.id), 'created_at desc, id desc')

  const byOffset = await p.keys('?limit=2&offset=2')
  t.same(byOffset.json.data.map((k: { id: string }) => k.id), all.slice(2, 4).map((k) => k.id))
  t.match(byOffset.json.pagination, { limit: 2, offset: 2, has_more: true })

  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res = await p.keys(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
    t.equal(res.status, 200)
    seen.push(...res.json.data.map((k: { id: string }) => k.id))
    cursor = res.json.pagination.next_cursor
  } while (cursor)
  t.same(seen, all.map((k) => k.id), 'the cursor walks the whole list once')

  const other = await project(t)
  const firstPage = await p.keys('?limit=2')
  const foreign = await other.keys(`?cursor=${firstPage.json.pagination.next_cursor}`)
  t.same([foreign.status, foreign.json.errors[0].path], [400, '/cursor'], "one project's cursor is refused in another's list")
  t.equal((await p.keys('?limit=0')).status, 400)
})

t.test('unknown or malformed project and key ids are 404', async (t) => {
  const p = await project(t)
  const app = p.app
  for (const id of ['prj_000000000000000000000', 'nope', 'key_000000000000000000000']) {
    const res = await call(t, app, { url: `/admin/v1/projects/${id}/api-keys`, headers: admin })
    t.same([res.status, res.json.code], [404, 'not_found'], `list ${id}`)
    t.equal((await call(t, app, { url: `/admin/v1/projects/${id}/api-keys?cursor=nope`, headers: admin })).status, 400, 'a query the list cannot use is a 400 first')
    t.equal((await call(t, app, { method: 'POST', url: `/admin/v1/projects/${id}/api-keys`, headers: admin, body: { name: 'x' } })).status, 404, `issue ${id}`)
  }
  const [key] = (await p.keys()).json.data
  const other = await project(t)
  t.equal((await other.patch(key.id, { name: 'x' })).status, 404, "another project's key is not found")
  t.equal((await p.patch('key_000000000000000000000', { name: 'x' })).status, 404)
  t.equal((await p.patch('nope', { name: 'x' })).status, 404)
  t.equal((await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/prj_000000000000000000000/api-keys/${key.id}`, headers: admin, body: {} })).status, 404)
})

t.test('a key takes a name and an expiry at creation, and PATCH changes, clears or keeps them', async (t) => {
  const p = await project(t)
  const issued = await p.issue({ name: '  CI deploys  ', expires_at: FUTURE })
  t.equal(issued.status, 201)
  t.match(issued.json.data, { name: 'CI deploys', expires_at: '2099-06-30T10:00:00.000Z', revoked_at: null })
  const keyId = issued.json.data.id as string
  t.equal((await call(t, p.app, { url: '/v1/changelog', key: issued.json.api_key })).status, 200, 'a key with a future expiry works')

  const renamed = await p.patch(keyId, { name: 'Deploy bot' })
  t.equal(renamed.status, 200)
  t.match(renamed.json.data, { id: keyId, name: 'Deploy bot', expires_at: '2099-06-30T10:00:00.000Z' }, 'only the fields sent change')
  // last_used_at is written off the request's path, whenever the key's use above is flushed:
  // the comparisons below leave it out.
  const noop = await p.patch(keyId, {})
  t.same(withoutLastUse(noop.json.data), withoutLastUse(renamed.json.data), 'an empty body is a no-op')
  const cleared = await p.patch(keyId, { name: null, expires_at: null })
  t.match(cleared.json.data, { name: null, expires_at: null }, 'null clears')
  const listed = (await p.keys()).json.data.find((k: { id: string }) => k.id === keyId)
  t.same(withoutLastUse(listed), withoutLastUse(cleared.json.data), 'the list shows the same record')

  const nulls = await p.issue({ name: null, expires_at: null })
  t.match(nulls.json.data, { name: null, expires_at: null })
  t.equal((await p.issue({})).status, 201, 'an empty body issues a plain key')
})

t.test('bad names and expiries are 400, before an unknown id is 404', async (t) => {
  const p = await project(t)
  const [key] = (await p.keys()).json.data
  for (const body of [{ name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, { name: 7 }, { expires_at: 'tomorrow' }, { expires_at: '2099-01-01T00:00:00' }, { id: 'key_x' }, { last_used_at: null }]) {
    const res = await p.patch(key.id, body)
    t.same([res.status, res.json.code], [400, 'validation_failed'], `PATCH ${JSON.stringify(body)}`)
    t.equal((await p.issue(body)).status, 400, `POST ${JSON.stringify(body)}`)
  }
  t.equal((await p.patch(key.id, { name: ` ${'x'.repeat(100)} ` })).status, 200, '100 characters after trimming')

  const past = await p.patch(key.id, { expires_at: '2020-01-01T00:00:00Z' })
  t.same([past.status, past.json.code], [400, 'validation_failed'])
  t.same(past.json.errors, [{ in: 'body', path: '/expires_at', message: 'must be in the future (to stop a key now, revoke it; null for no expiry)' }])
  t.equal((await p.issue({ expires_at: '2020-01-01T00:00:00Z' })).status, 400, 'also at creation')
  t.equal((await p.patch('key_000000000000000000000', { expires_at: '2020-01-01T00:00:00Z' })).status, 400, '400 comes before 404')
  t.equal((await p.keys()).json.data[0].expires_at, null, 'nothing changed')
})

t.test('an expired key is 401 on the very next request: a key-scoped read, a write, and an answer without rows', async (t) => {
  const p = await project(t)
  const issued = await p.issue({ name: 'Short-lived', expires_at: FUTURE })
  const key = issued.json.api_key as string
  const entry = await call(t, p.app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Out', status: 'published' } })
  t.equal(entry.status, 201)
  // The key now has a budget in this window, so its reads authenticate in their own statement.
  t.equal((await call(t, p.app, { url: `/v1/changelog/${entry.json.data.id}`, key })).status, 200)

  await expireNow(issued.json.data.id)
  const read = await call(t, p.app, { url: `/v1/changelog/${entry.json.data.id}`, key })
  t.same([read.status, read.json.code, read.headers['www-authenticate']], [401, 'unauthorized', 'Bearer'], 'a key-scoped read with rows')
  t.match(read.json.detail, /expired/)
  const write = await call(t, p.app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Late' } })
  t.same([write.status, write.json.code], [401, 'unauthorized'], 'a write')
  for (const url of ['/v1/changelog?limit=0', '/v1/beta/programs', `/v1/changelog/ch_000000000000000000000`]) {
    const res = await call(t, p.app, { url, key })
    t.same([res.status, res.json.code], [401, 'unauthorized'], `${url}: an answer without rows looks the key up first`)
  }
  t.equal((await call(t, p.app, { url: '/v1/changelog', key: p.firstKey })).status, 200, 'the other key still works')
  t.equal((await p.keys()).json.data[0].revoked_at, null, 'expired, not revoked')

  // Until it is revoked, an expired key's date may be moved; revocation is final.
  const extended = await p.patch(issued.json.data.id, { expires_at: FUTURE })
  t.equal(extended.status, 200)
  t.equal((await call(t, p.app, { url: `/v1/changelog/${entry.json.data.id}`, key })).status, 200, 'a new expiry in the future makes it work again')
  t.equal((await p.revoke(issued.json.data.id)).status, 204)
  const revised = await p.patch(issued.json.data.id, { name: 'Leaked', expires_at: null })
  t.equal(revised.status, 200, 'a revoked key may still be renamed, for the record')
  t.match(revised.json.data, { name: 'Leaked', expires_at: null })
  t.type(revised.json.data.revoked_at, 'string')
  t.equal((await call(t, p.app, { url: '/v1/changelog', key })).status, 401, 'and stays revoked')
})

t.test("a key's Location answers GET with the key as the list shows it, revoked or not; another project's key is 404", async (t) => {
  const p = await project(t)
  const issued = await p.issue({ name: 'Deploy bot' })
  const location = issued.headers.location as string
  t.equal(location, `/admin/v1/projects/${p.id}/api-keys/${issued.json.data.id}`)
  const got = await call(t, p.app, { url: location, headers: admin })
  t.equal(got.status, 200)
  t.same(got.json, { data: issued.json.data }, 'the record the 201 gave, without the key itself')
  t.notOk(got.raw.includes(issued.json.api_key), 'the key itself is never shown again')

  t.equal((await p.revoke(issued.json.data.id)).status, 204)
  const revoked = await p.get(issued.json.data.id)
  t.type(revoked.json.data.revoked_at, 'string', 'a revoked key is still there, with revoked_at')
  t.same(revoked.json.data, (await p.keys()).json.data.find((k: { id: string }) => k.id === issued.json.data.id), 'as the list shows it')

  const other = await project(t)
  for (const id of [issued.json.data.id, 'key_000000000000000000000', 'nope']) {
    const res = await other.get(id)
    t.same([res.status, res.json.code], [404, 'not_found'], `${id} from another project`)
  }
  const noProject = await call(t, p.app, { url: `/admin/v1/projects/prj_000000000000000000000/api-keys/${issued.json.data.id}`, headers: admin })
  t.equal(noProject.status, 404, 'an unknown project is 404')
  t.equal((await call(t, p.app, { url: location })).status, 401, 'the admin token is required')
})
