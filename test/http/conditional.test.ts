// ETag, If-None-Match (304) and If-Match (412) on the authenticated API.
import t from 'tap'
import { TAG_LIST_MAX } from '../../src/http/conditional.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { spec } from '../helpers/spec-check.js'

t.test('reads carry a strong ETag, private caching headers, and 304 on a matching If-None-Match', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Tagged' } })
  const url = `/v1/beta/programs/${created.json.data.id}`
  const first = await call(t, app, { url, key })
  const etag = first.headers.etag as string
  t.match(etag, /^"[A-Za-z0-9_-]{27}"$/)
  t.equal(first.headers['cache-control'], 'private, no-cache')
  t.equal(first.headers.vary, 'Authorization')

  const again = await call(t, app, { url, key, headers: { 'if-none-match': etag } })
  t.equal(again.status, 304)
  t.equal(again.raw, '')
  t.equal(again.headers.etag, etag)
  t.equal((await call(t, app, { url, key, headers: { 'if-none-match': `"other", W/${etag}` } })).status, 304, 'weak comparison, lists')
  t.equal((await call(t, app, { url, key, headers: { 'if-none-match': '"other"' } })).status, 200)

  await call(t, app, { method: 'PATCH', url, key, body: { summary: 'changed' } })
  const changed = await call(t, app, { url, key, headers: { 'if-none-match': etag } })
  t.equal(changed.status, 200, 'a change gives a new tag')
  t.not(changed.headers.etag, etag)

  const list = await call(t, app, { url: '/v1/beta/programs', key })
  t.ok(list.headers.etag, 'lists carry an ETag')
  t.equal((await call(t, app, { url: '/v1/beta/programs', key, headers: { 'if-none-match': list.headers.etag as string } })).status, 304)
})

t.test('If-Match on PATCH and DELETE: 412 and nothing changed when stale, through when current', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'v1' } })
  const url = `/v1/changelog/${created.json.data.id}`
  const read = await call(t, app, { url, key })
  const stale = read.headers.etag as string

  const patched = await call(t, app, { method: 'PATCH', url, key, body: { title: 'v2' }, headers: { 'if-match': stale } })
  t.equal(patched.status, 200, 'the tag from the read matches')
  t.equal(patched.headers.etag, (await call(t, app, { url, key })).headers.etag, "PATCH's ETag is the new GET's")

  const lost = await call(t, app, { method: 'PATCH', url, key, body: { title: 'v3' }, headers: { 'if-match': stale } })
  t.equal(lost.status, 412)
  t.equal(lost.json.code, 'precondition_failed')
  t.equal((await call(t, app, { url, key })).json.data.title, 'v2', 'a stale PATCH changes nothing')

  const refused = await call(t, app, { method: 'DELETE', url, key, headers: { 'if-match': stale } })
  t.equal(refused.status, 412)
  t.equal((await call(t, app, { url, key })).status, 200, 'a stale DELETE deletes nothing')
  const deleted = await call(t, app, { method: 'DELETE', url, key, headers: { 'if-match': patched.headers.etag as string } })
  t.equal(deleted.status, 204)

  const missing = await call(t, app, { method: 'PATCH', url, key, body: { title: 'x' }, headers: { 'if-match': stale } })
  t.equal(missing.status, 404, 'a missing resource is still 404')
  const invalid = await call(t, app, { method: 'PATCH', url, key, body: { title: '' }, headers: { 'if-match': stale } })
  t.equal(invalid.status, 400, 'validation comes first')
})

t.test('If-Match compares against the representation in the locale written', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Hello' } })
  const url = `/v1/changelog/${created.json.data.id}`
  await call(t, app, { method: 'PATCH', url, key, body: { locale: 'fr', title: 'Bonjour' } })
  const fr = await call(t, app, { url: `${url}?locale=fr`, key })
  const ok = await call(t, app, { method: 'PATCH', url, key, body: { locale: 'fr', title: 'Salut' }, headers: { 'if-match': fr.headers.etag as string } })
  t.equal(ok.status, 200)
  const base = await call(t, app, { url, key })
  const wrongLocale = await call(t, app, { method: 'PATCH', url, key, body: { locale: 'fr', title: 'Coucou' }, headers: { 'if-match': base.headers.etag as string } })
  t.equal(wrongLocale.status, 412)
})

t.test("the server's bound on If-None-Match and If-Match is the spec's", async (t) => {
  const parameters = (spec as { components: { parameters: Record<string, { schema: { maxLength?: number } }> } }).components.parameters
  t.equal(parameters.IfNoneMatch!.schema.maxLength, TAG_LIST_MAX)
  t.equal(parameters.IfMatch!.schema.maxLength, TAG_LIST_MAX)
})

t.test('If-None-Match and If-Match longer than the spec’s 1024 characters are a 400, and nothing changes', async (t) => {
  // They were read however long they were (found by an outside review).
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Bounded' } })
  const url = `/v1/changelog/${created.json.data.id}`
  const etag = String((await call(t, app, { url, key })).headers.etag)
  const long = `${etag}, ${'"x", '.repeat(250)}"y"`
  t.ok(long.length > 1024)
  const read = await call(t, app, { url, key, headers: { 'if-none-match': long } })
  t.equal(read.status, 400)
  t.match(read.json.errors, [{ in: 'header', path: '/If-None-Match' }])
  const write = await call(t, app, { method: 'PATCH', url, key, body: { title: 'Changed' }, headers: { 'if-match': long } })
  t.equal(write.status, 400)
  t.match(write.json.errors, [{ in: 'header', path: '/If-Match' }])
  t.equal((await call(t, app, { url, key })).json.data.title, 'Bounded', 'nothing changed')
  const atTheBound = `${etag}, ${'"x", '.repeat(250)}`.slice(0, 1024)
  t.equal((await call(t, app, { url, key, headers: { 'if-none-match': atTheBound } })).status, 304, '1024 characters are read')
})
