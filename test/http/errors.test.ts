// Fastify's own failures leave as problem+json too: unknown routes, wrong methods, bodies that
// are not JSON, too large, malformed or absurdly nested, and URLs that cannot be decoded.
import t from 'tap'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

t.test('an unknown path is a problem+json 404', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { url: '/v1/nope' })
  t.equal(res.status, 404)
  t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  t.match(res.json, { type: 'about:blank', title: 'Not Found', status: 404, code: 'not_found' })
  t.equal(res.json.request_id, res.headers['x-request-id'])
})

t.test('a method a path does not have is 405 with Allow', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { method: 'PUT', url: '/v1/changelog' })
  t.equal(res.status, 405)
  t.equal(res.json.code, 'method_not_allowed')
  t.equal(res.headers.allow, 'GET, POST, HEAD')
  const withId = await call(t, app, { method: 'POST', url: '/v1/beta/programs/bp_000000000000000000000' })
  t.equal(withId.status, 405)
  t.equal(withId.headers.allow, 'GET, PATCH, DELETE, HEAD')
})

t.test('a body that is not JSON is 415', async (t) => {
  const app = await testApp()
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: { ...admin, 'content-type': type }, body: 'name=x' })
    t.equal(res.status, 415, type)
    t.equal(res.json.code, 'unsupported_media_type')
  }
  const charset = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: { ...admin, 'content-type': 'application/json; charset=utf-8' }, body: '{"name":"x"}' })
  t.equal(charset.status, 201, 'application/json with a charset is JSON')
})

t.test('malformed JSON is 400 invalid_json', async (t) => {
  const app = await testApp()
  for (const body of ['{bad', '{"name": "x",}', '[1, 2', '"unterminated']) {
    const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body })
    t.equal(res.status, 400, body)
    t.equal(res.json.code, 'invalid_json')
  }
})

t.test('a missing body where one is required is 400', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin })
  t.equal(res.status, 400)
  t.equal(res.json.code, 'validation_failed')
  const empty = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: { ...admin, 'content-type': 'application/json' }, body: '' })
  t.equal(empty.status, 400)
})

t.test('a body over 1 MiB is 413', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'x'.repeat(1024 * 1024) } })
  t.equal(res.status, 413)
  t.equal(res.json.code, 'payload_too_large')
})

t.test('absurd bodies are 4xx, never 5xx', async (t) => {
  const app = await testApp()
  const deep = '['.repeat(10_000) + ']'.repeat(10_000)
  const deepObject = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)
  for (const body of [deep, deepObject, '{"name": 1e309}', '{"name": "a\\u0000b"}', 'null', '[]', '42', '{"__proto__": {"admin": true}, "name": "x"}']) {
    const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body })
    t.ok(res.status >= 400 && res.status < 500, `${body.slice(0, 30)} → ${res.status}`)
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  }
})

t.test('validation failures name every failed rule', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: '', plan: 'gold', extra: 1 } })
  t.equal(res.status, 400)
  t.equal(res.json.code, 'validation_failed')
  const paths = (res.json.errors as { path: string }[]).map((e) => e.path).sort()
  t.same(paths, ['/extra', '/name', '/plan'])
  t.match(res.json.detail, /^body\//)
})

t.test('query parameters: out of range, not integers, repeated or unknown are 400', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const query of ['limit=0', 'limit=101', 'limit=1e309', 'limit=2.5', 'limit=abc', 'limit=1&limit=2', 'offset=-1', 'offset=1000001', 'Limit=5', 'status=Draft', 'status=unknown', 'foo=bar']) {
    const res = await call(t, app, { url: `/v1/beta/programs?${query}`, key })
    t.equal(res.status, 400, query)
    t.equal(res.json.code, 'validation_failed')
    t.equal(res.json.errors[0].in, 'query')
  }
})

t.test('URLs that cannot be decoded are 4xx problem+json', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const url of ['/v1/beta/programs/%E0%A4%A', '/v1/beta/programs/%', '/v1/changelog/%ZZ']) {
    const res = await call(t, app, { url, key })
    t.ok(res.status >= 400 && res.status < 500, `${url} → ${res.status}`)
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  }
})

t.test('a field required by another field is reported at the missing field', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'x', published_at: '2026-01-01T00:00:00Z' } })
  t.equal(res.status, 400)
  t.same(res.json.errors.map((e: { path: string }) => e.path), ['/status'])
})

t.test('what a problem echoes back stays within the documented bounds', async (t) => {
  const app = await testApp()
  const many = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`field_${i}`, i]))
  const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'x', ...many } })
  t.equal(res.status, 400)
  t.equal(res.json.errors.length, 100, 'the first 100 failures')
  const long = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'x', ['f'.repeat(5000)]: 1 } })
  t.equal(long.status, 400)
  t.ok(long.json.errors[0].path.length <= 1024)
  t.ok(long.json.detail.length <= 2048)
})

t.test('an id longer than any real one is 404, not 400', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { url: `/v1/changelog/ch_${'a'.repeat(100)}`, key })
  t.equal(res.status, 404)
})

t.test('strings PostgreSQL text cannot hold are refused with 400, keys included', async (t) => {
  const app = await testApp()
  for (const body of ['{"name": "\\u00e9\\udfff"}', '{"name": "\\ud800"}', '{"name": "a\\u0000"}', '{"name": "x", "\\udfff": 1}', '{"name": "ok \\ud83d\\ude80"}']) {
    const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body })
    if (body.includes('\\ud83d\\ude80')) t.equal(res.status, 201, 'a well-formed pair (an emoji) is fine')
    else {
      t.equal(res.status, 400, body)
      t.equal(res.json.code, 'validation_failed')
    }
  }
})

t.test('a URL needs a host, and pattern failures explain the rule in words', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'x', access_url: 'http://' } })
  t.equal(res.status, 400)
  t.match(res.json.errors, [{ in: 'body', path: '/access_url', message: /^is invalid: An absolute `http` or `https` URL of at most 2048 characters, with a host and without user info/ }])
  t.equal(res.json.errors.length, 1, 'one error: not the null branch of the nullable field, not the pattern and the format twice')
  const label = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'x', labels: ['a'.repeat(33)] } })
  t.same(label.json.errors, [{ in: 'body', path: '/labels/0', message: 'is invalid: A label of 1 to 32 characters after trimming.' }])
})
