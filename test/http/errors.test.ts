// Fastify's own failures leave as problem+json too: unknown routes, wrong methods, bodies that
// are not JSON, too large, malformed or absurdly nested, and URLs that cannot be decoded.
import t from 'tap'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { overHttp, rawExchange } from '../helpers/over-http.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

t.test('an unknown path is a problem+json 404', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { url: '/v1/nope' })
  t.equal(res.status, 404)
  t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  t.match(res.json, { type: 'about:blank', title: 'Not Found', status: 404, code: 'not_found' })
  t.equal(res.json.request_id, res.headers['x-request-id'])
})

t.test('an unknown path or method is its 404 or 405 whatever its headers or query', async (t) => {
  // An If-Match longer than the spec's bound, or a query that does not decode, made them a 400
  // (found by a contract fuzz).
  const app = await testApp()
  const long = 'x'.repeat(2000)
  const answers = [
    await call(t, app, { url: '/nope', headers: { 'if-none-match': long } }),
    await call(t, app, { method: 'PUT', url: '/v1/changelog', headers: { 'if-match': long } }),
    await call(t, app, { url: '/nope?%ZZ=1' }),
    await call(t, app, { url: '/beta/feedback?%ZZ=1' }),
  ]
  t.same(
    answers.map((res) => [res.status, res.json.code]),
    [
      [404, 'not_found'],
      [405, 'method_not_allowed'],
      [404, 'not_found'],
      [405, 'method_not_allowed'],
    ],
  )
  t.equal((await call(t, app, { url: '/v1/changelog?%ZZ=1', key: (await createProject()).key })).status, 400, 'under an operation the query is still a 400')
})

t.test('an absolute-form request target is answered as its path is: 405 with Allow, 404, 200', async (t) => {
  const send = await overHttp(await testApp({ adminToken: ADMIN_TOKEN }))
  const wrongMethod = await send({ method: 'DELETE', path: 'http://api.example/healthz' })
  t.same([wrongMethod.status, JSON.parse(wrongMethod.body).code, wrongMethod.headers.allow], [405, 'method_not_allowed', 'GET, HEAD'])
  t.equal((await send({ method: 'DELETE', path: 'http://api.example/nowhere?x=1' })).status, 404)
  t.equal((await send({ path: 'http://api.example/healthz' })).status, 200)
})

t.test('a Host header sent twice or holding no host and port is a 400 (RFC 9112 §3.2)', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const host of ['a b', 'h:99999', '[::1', '[not-ipv6]:80', 'h:1:2', 'h/x', 'h?x']) {
    const res = await call(t, app, { url: '/v1/changelog', key, headers: { host } })
    t.same([res.status, res.json.errors], [400, [{ in: 'header', path: '/Host', message: 'must be one host name or address, with an optional port, sent once' }]], host)
  }
  for (const host of ['api.example', 'api.example:8080', '127.0.0.1:3000', '[::1]:3000', '[2001:db8::1]', 'my_service', '']) {
    t.equal((await call(t, app, { url: '/healthz', headers: { host } })).status, 200, JSON.stringify(host))
  }
  t.equal((await call(t, app, { url: '/v1/changelog', headers: { host: 'a b' } })).status, 401, 'a missing key first')
  const listening = await testApp({ adminToken: ADMIN_TOKEN })
  await overHttp(listening)
  const twice = await rawExchange(listening, 'GET /healthz HTTP/1.1\r\nHost: api.example\r\nHost: evil.example\r\nConnection: close\r\n\r\n')
  t.match(twice, /^HTTP\/1\.1 400 [^]*"path":"\/Host"/, 'sent twice')
  const http10 = await rawExchange(listening, 'GET /healthz HTTP/1.0\r\n\r\n')
  t.match(http10, /^HTTP\/1\.1 200 /, 'HTTP/1.0 may send none')
  // Node answered these itself, a bare 400 without X-Request-Id or a problem (found by an attacker review).
  const none = await rawExchange(listening, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n')
  t.match(none, /^HTTP\/1\.1 400 [^]*x-request-id: [^]*x-content-type-options: nosniff[^]*"path":"\/Host","message":"is required: one host name or address, with an optional port"/, 'HTTP/1.1 without one: a 400 problem')
  const docs = await rawExchange(listening, 'GET /docs/ HTTP/1.1\r\nConnection: close\r\n\r\n')
  t.match(docs, /^HTTP\/1\.1 400 [^]*"path":"\/Host","message":"is required/, 'at /docs/ too, naming Host')
  const docs10 = await rawExchange(listening, 'GET /docs/ HTTP/1.0\r\n\r\n')
  t.match(docs10, /^HTTP\/1\.1 400 [^]*"path":"\/Host"/, 'HTTP/1.0 at /docs/, which needs a host to build its page: naming Host, not X-Forwarded-Host')
})

t.test('headers past the size Node reads are a 431 problem; its answer to a HEAD has no body', async (t) => {
  // Node's own answer had no X-Request-Id and no problem; ours to a HEAD had a body after its
  // headers, which Node's client took for a broken answer (found by a contract fuzz).
  const app = await testApp()
  await overHttp(app)
  const long = 'x'.repeat(70_000)
  const get = await rawExchange(app, `GET /v1/changelog?q=${long} HTTP/1.1\r\nHost: a\r\n\r\n`, { keepOpen: true })
  t.match(get, /^HTTP\/1\.1 431 [^]*x-request-id: [^]*x-content-type-options: nosniff[^]*\r\n\r\n\{"type":"about:blank","title":"Request Header Fields Too Large","status":431,"code":"headers_too_large"/)
  const head = await rawExchange(app, `HEAD /v1/changelog?q=${long} HTTP/1.1\r\nHost: a\r\n\r\n`, { keepOpen: true })
  t.match(head, /^HTTP\/1\.1 431 [^]*content-length: \d+\r\n/, 'a HEAD: the same status and headers')
  t.ok(head.endsWith('\r\n\r\n'), 'and nothing after them')
})

t.test('an Expect other than 100-continue is a 400 problem, after the key; 100-continue is met', async (t) => {
  // Node answered a bare 417, without X-Request-Id or a problem (found by an attacker review).
  const app = await testApp({ adminToken: ADMIN_TOKEN })
  const { key } = await createProject()
  await overHttp(app)
  const unmet = await rawExchange(app, `GET /v1/changelog HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nExpect: something-else\r\nConnection: close\r\n\r\n`, { keepOpen: true })
  t.match(unmet, /^HTTP\/1\.1 400 [^]*x-request-id: [^]*"path":"\/Expect"/, 'refused, naming the header')
  const withoutKey = await rawExchange(app, 'GET /v1/changelog HTTP/1.1\r\nHost: a\r\nExpect: something-else\r\nConnection: close\r\n\r\n', { keepOpen: true })
  t.match(withoutKey, /^HTTP\/1\.1 401 /, 'a missing key first')
  const met = await rawExchange(app, `GET /v1/changelog HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`, { keepOpen: true })
  t.match(met, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, '100-continue: continued, then answered')
  // Node said 100 Continue at once, inviting a body it then refused unread (found by an attacker review).
  const body = JSON.stringify({ title: 'Continued' })
  const post = (headers: string) =>
    rawExchange(app, `POST /v1/changelog HTTP/1.1\r\nHost: a\r\n${headers}Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`, { keepOpen: true })
  t.match(await post(''), /^HTTP\/1\.1 401 /, 'no key: refused, never invited to send the body')
  t.match(await post(`Authorization: Bearer ${key}\r\n`), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /, 'a key: invited, then written')
  const tooLarge = await rawExchange(app, `POST /v1/changelog HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\nConnection: close\r\n\r\n`, { keepOpen: true })
  t.match(tooLarge, /^HTTP\/1\.1 413 /, 'a body over the limit: refused, never invited')
  const badHost = await rawExchange(app, `POST /v1/changelog HTTP/1.1\r\nHost: a b\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`, { keepOpen: true })
  t.match(badHost, /^HTTP\/1\.1 400 [^]*"path":"\/Host"/, 'a Host that breaks its rules: refused, never invited')
})

t.test('an answer to a request never invited to send its body says the connection closes', async (t) => {
  // Node closes such a connection (the body held back may come yet, or never); the answer said
  // nothing of it, so a client meant to reuse the connection.
  const app = await testApp()
  await overHttp(app)
  const { key } = await createProject()
  const held = (headers: string, length = 20) => `POST /v1/changelog HTTP/1.1\r\nHost: a\r\n${headers}Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`
  const auth = `Authorization: Bearer ${key}\r\n`
  for (const [text, status] of [
    [held(''), 401],
    [held(auth, 2_000_000), 413],
    [held(`${auth}Content-Encoding: br\r\n`), 415],
  ] as const) {
    // keepOpen: the exchange ends only as the server closes.
    const head = (await rawExchange(app, text, { keepOpen: true })).split('\r\n\r\n')[0]!
    t.match(head, new RegExp(`^HTTP/1\\.1 ${status} `), `${status}: never invited`)
    t.match(head, /\r\nconnection: close(\r\n|$)/i, `${status}: says the connection closes`)
  }
})

t.test('CONNECT is a 405 problem with an empty Allow, not a connection closed unanswered', async (t) => {
  const app = await testApp({ adminToken: ADMIN_TOKEN })
  await overHttp(app)
  for (const target of ['api.example:443', '/healthz']) {
    const answer = await rawExchange(app, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`)
    const [head = '', body = ''] = answer.split('\r\n\r\n')
    t.match(head, /^HTTP\/1\.1 405 Method Not Allowed\r\n/, target)
    t.match(head, /\r\nallow: \r\n/, `${target}: no method is allowed`)
    t.match(head, /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/)
    const problem = JSON.parse(body)
    t.match(problem, { status: 405, code: 'method_not_allowed', detail: 'CONNECT is not allowed: this service is not a proxy.' })
    t.match(head, new RegExp(`\\r\\nx-request-id: ${problem.request_id}\\r\\n`), 'the id is in the header and the body')
  }
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
  // The router decodes a percent-encoded path (GET /v1/beta/%70rograms is GET /v1/beta/programs):
  // its wrong methods are told apart from unknown paths on the decoded path too.
  for (const url of ['/v1/beta/%70rograms', '/v1/beta/%70rograms?limit=1', '/v1/changelog/%63h_000000000000000000000', '/v1/beta/programs/bp_000000000000000000000/%74esters']) {
    const encoded = await call(t, app, { method: 'PUT', url })
    t.same([encoded.status, encoded.json.code], [405, 'method_not_allowed'], url)
    t.match(encoded.headers.allow, /^GET, /, url)
  }
  t.equal((await call(t, app, { method: 'PUT', url: '/v1/beta/%2Fprograms' })).status, 404, 'an encoded slash is no separator')
  t.equal((await call(t, app, { method: 'PUT', url: '/v1/beta/programs/' })).headers.allow, 'GET, PATCH, DELETE, HEAD', "a trailing slash is a program's path, whose id is empty, as the router reads it")
  t.equal((await call(t, app, { method: 'PUT', url: '/v1/beta/programs//feedback' })).headers.allow, 'GET, HEAD', 'an empty id likewise')
  t.equal((await call(t, app, { method: 'PUT', url: '/v1/beta/programs/x/y/z' })).status, 404, 'a path the API does not have')
  // The API reference's script is no operation of the spec, but a path the service has.
  for (const method of ['OPTIONS', 'DELETE'] as const) {
    const script = await call(t, app, { method, url: '/docs/js/scalar.js' })
    t.same([script.status, script.headers.allow], [405, 'GET, HEAD'], `${method} /docs/js/scalar.js`)
  }
  t.equal((await call(t, app, { method: 'DELETE', url: '/docs/openapi.json' })).status, 404, "the plugin's copy of the document is no path of the service")
  await overHttp(app)
  const fragment = await rawExchange(app, 'PUT /v1/changelog#x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
  t.match(fragment, /^HTTP\/1\.1 405 [^]*allow: GET, POST, HEAD/i, 'a fragment ends the path, as the router reads it')
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

t.test('a 413 keeps its connection: the rest of the body is read and dropped, and the next request answered', async (t) => {
  // Fastify said Connection: close on it, and Node closed the socket with the body still
  // arriving: a client still writing (Prism, in CI's contract step) got a reset, not its 413.
  const app = await testApp()
  const { key } = await createProject()
  await overHttp(app)
  const body = JSON.stringify({ title: 'x'.repeat(2 * 1024 * 1024) })
  const answer = await rawExchange(
    app,
    `POST /v1/changelog HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
      'GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n',
  )
  const [first = '', second = ''] = answer.split(/(?=HTTP\/1\.1 \d{3} )/)
  t.match(first, /^HTTP\/1\.1 413 /, 'the 413')
  t.notMatch(first, /\r\nconnection: close\r\n/i, 'which does not close the connection')
  t.match(second, /^HTTP\/1\.1 200 [^]*\{"status":"ok"\}$/, 'and the next request on it is answered')
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

t.test('each message says what is allowed, in plain words (test/http/validation-messages.test.ts walks every enum, required and patterned field)', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const errorsOf = async (options: Parameters<typeof call>[2]) => {
    const res = await call(t, app, { key, ...options })
    t.equal(res.status, 400)
    return res.json.errors as { in: string; path: string; message: string }[]
  }
  t.same(await errorsOf({ url: '/v1/beta/programs?limit=0&offset=abc&status=active&status=closed&foo=1' }), [
    { in: 'query', path: '/foo', message: 'is not a parameter of this operation; its parameters are: status, limit, offset, cursor' },
    { in: 'query', path: '/status', message: 'must be sent once, as one of: draft, active, closed' },
    { in: 'query', path: '/limit', message: 'must be an integer from 1 to 100' },
    { in: 'query', path: '/offset', message: 'must be an integer from 0 to 1000000' },
  ])
  t.same(await errorsOf({ method: 'POST', url: '/v1/beta/programs', body: { name: 'x', summary: 'x'.repeat(1001), allow_public_signup: 'yes', version: 2, foo: 1 } }), [
    { in: 'body', path: '/foo', message: 'is not a field of this operation; its fields are: name, version, summary, access_url, access_instructions, status, allow_public_signup, feedback_deadline' },
    { in: 'body', path: '/version', message: 'must be null or a SemVer version such as 1.2.3 or 2.1.0-beta.1 (no leading v)' },
    { in: 'body', path: '/summary', message: 'must be at most 1000 characters' },
    { in: 'body', path: '/allow_public_signup', message: 'must be true or false' },
  ])
  t.same(await errorsOf({ method: 'POST', url: '/v1/changelog', body: { title: 'x', labels: Array(11).fill('a'), body: 5 } }), [
    { in: 'body', path: '/body', message: 'must be a string of at most 100000 characters' },
    { in: 'body', path: '/labels', message: 'must have at most 10 items' },
  ])
  t.same(await errorsOf({ method: 'POST', url: '/v1/changelog', body: ['title'] }), [{ in: 'body', path: '', message: 'must be a JSON object' }])
  const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: {} })
  t.equal(res.json.detail, 'body/title is required', 'the detail is the first message, prefixed by its location')
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

t.test('a path that cannot be decoded keeps the order of checks: 401 and 403 come before its 400', async (t) => {
  // The router refused such a path before any hook, so a request without a key got the 400
  // (found by an outside review); the contract puts 401, then 403, ahead of 400.
  const app = await testApp()
  const pro = await createProject()
  const free = await createProject({ plan: 'free' })
  const noBeta = await createProject({ beta: false })
  const cases: [string, { method?: 'GET' | 'DELETE'; url: string; key?: string }, number, string][] = [
    ['no key', { method: 'DELETE', url: '/v1/changelog/%ZZ' }, 401, 'unauthorized'],
    ['an unknown key', { url: '/v1/beta/programs/%E0%A4%A', key: `fbk_${'x'.repeat(40)}` }, 401, 'unauthorized'],
    ['a write on the free plan', { method: 'DELETE', url: '/v1/changelog/%ZZ', key: free.key }, 403, 'plan_required'],
    ['the beta feature off', { url: '/v1/beta/programs/%ED%A0%80', key: noBeta.key }, 403, 'beta_disabled'],
    ['a key that may', { method: 'DELETE', url: '/v1/changelog/%ZZ', key: pro.key }, 400, 'validation_failed'],
    ['a key that may, the query undecodable too', { url: '/v1/changelog/%ZZ?locale=%ZZ', key: pro.key }, 400, 'validation_failed'],
    ['no such path', { url: '/nowhere/%ZZ' }, 404, 'not_found'],
  ]
  for (const [what, request, status, code] of cases) {
    const res = await call(t, app, request)
    t.equal(res.status, status, what)
    t.equal(res.json.code, code, what)
  }
  const admin = await call(t, app, { url: '/admin/v1/projects/%ZZ' })
  t.equal(admin.status, 401, 'the operator API: no token, 401 first')
})

t.test('a path segment longer than any id keeps the order of checks: 401, 403 and 400 come before its 404', async (t) => {
  // The router refused a segment over 200 characters before any hook, so a request without a key
  // got a 404 without WWW-Authenticate (found by an outside review). Node's header limit bounds
  // the request line; below it the router takes any segment, and the operation's 404 comes last.
  const app = await testApp()
  const pro = await createProject()
  const free = await createProject({ plan: 'free' })
  const noBeta = await createProject({ beta: false })
  const long = `ch_${'a'.repeat(5_000)}`
  const cases: [string, { method?: 'GET' | 'DELETE'; url: string; key?: string }, number, string][] = [
    ['no key', { url: `/v1/changelog/${long}` }, 401, 'unauthorized'],
    ['a write on the free plan', { method: 'DELETE', url: `/v1/changelog/${long}`, key: free.key }, 403, 'plan_required'],
    ['the beta feature off', { url: `/v1/beta/programs/bp_${'a'.repeat(300)}`, key: noBeta.key }, 403, 'beta_disabled'],
    ['a query the operation does not take', { url: `/v1/changelog/${long}?foo=1`, key: pro.key }, 400, 'validation_failed'],
    ['a key that may', { method: 'DELETE', url: `/v1/changelog/${long}`, key: pro.key }, 404, 'not_found'],
    ['a tester under a long program id', { url: `/v1/beta/programs/bp_${'a'.repeat(300)}/testers`, key: pro.key }, 404, 'not_found'],
  ]
  for (const [what, request, status, code] of cases) {
    const res = await call(t, app, request)
    t.equal(res.status, status, what)
    t.equal(res.json.code, code, what)
    if (status === 401) t.equal(res.headers['www-authenticate'], 'Bearer', 'with its challenge')
  }
})

t.test('a list under a parent: a query it cannot use is a 400 before an unknown parent is a 404', async (t) => {
  // The contract's order of checks (400, then 404) holds under a parent too: the lists answered
  // 404 for an unknown parent whatever the query held (found by an outside review).
  const app = await testApp()
  const { key } = await createProject()
  const parents = [
    { url: '/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA/testers', key },
    { url: '/v1/beta/programs/nope/testers', key },
    { url: '/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA/feedback', key },
    { url: '/v1/webhook-endpoints/we_AAAAAAAAAAAAAAAAAAAAA/deliveries', key },
    { url: '/admin/v1/projects/prj_AAAAAAAAAAAAAAAAAAAAA/api-keys', headers: admin },
    { url: '/admin/v1/projects/nope/api-keys', headers: admin },
  ]
  for (const parent of parents) {
    t.equal((await call(t, app, parent)).status, 404, `${parent.url}: 404`)
    for (const [query, path] of [
      ['cursor=abc', '/cursor'],
      ['cursor=abc&offset=5', '/offset'],
    ]) {
      const res = await call(t, app, { ...parent, url: `${parent.url}?${query}` })
      t.same([res.status, res.json.code, res.json.errors?.[0]?.path], [400, 'validation_failed', path], `${parent.url}?${query}: 400 first`)
    }
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

t.test('a URL needs a host, and pattern failures say what is expected, in words', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'x', access_url: 'http://' } })
  t.equal(res.status, 400)
  t.same(res.json.errors, [{ in: 'body', path: '/access_url', message: 'must be an absolute http or https URL of at most 2048 characters, with a host and no user info, such as https://example.com/beta' }])
  t.equal(res.json.errors.length, 1, 'one error: not the null branch of the nullable field, not the pattern and the format twice')
  const label = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'x', labels: ['a'.repeat(33)] } })
  t.same(label.json.errors, [{ in: 'body', path: '/labels/0', message: 'must be a label of 1 to 32 characters, not counting white space around them' }])
})

t.test('every header line is read, however many; a Content-Type sent twice is a 400', async (t) => {
  // Node read the first 2000 lines and dropped the rest: an Authorization after a thousand filler
  // headers was a 401; a second Content-Type was ignored (found by an attacker review).
  const app = await testApp({ adminToken: ADMIN_TOKEN })
  const { key } = await createProject()
  await overHttp(app)
  const fillers = Array.from({ length: 1500 }, (_, i) => `X-F${i}: 1\r\n`).join('')
  const late = await rawExchange(app, `GET /v1/changelog HTTP/1.1\r\nHost: a\r\n${fillers}Authorization: Bearer ${key}\r\nConnection: close\r\n\r\n`, { keepOpen: true })
  t.match(late, /^HTTP\/1\.1 200 /, 'the key after 1500 headers is read')
  const body = JSON.stringify({ title: 'Twice' })
  const twice = await rawExchange(
    app,
    `POST /v1/changelog HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    { keepOpen: true },
  )
  t.match(twice, /^HTTP\/1\.1 400 [^]*"path":"\/Content-Type","message":"must be sent once"/, 'Content-Type twice: refused')
  // Whichever comes first: the parser would answer 415 to a first text/plain, before the 400.
  for (const [first, second] of [['text/plain', 'application/json'], ['application/json', 'application/json']]) {
    const res = await rawExchange(
      app,
      `POST /v1/changelog HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${first}\r\nContent-Type: ${second}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      { keepOpen: true },
    )
    t.match(res, /^HTTP\/1\.1 400 [^]*"path":"\/Content-Type","message":"must be sent once"/, `${first}, then ${second}: the 400`)
  }
  const unkeyed = await rawExchange(
    app,
    `POST /v1/changelog HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    { keepOpen: true },
  )
  t.match(unkeyed, /^HTTP\/1\.1 401 /, 'after the key: without one, the 401')
})

t.test('Expect in HTTP/1.0 is ignored; an Expect list is refused before the body is awaited', async (t) => {
  // Found by a review: HTTP/1.0 got a 100 Continue (RFC 9110: never a 1xx to HTTP/1.0), and
  // `Expect: 100-continue, x` waited for a body that a waiting client never sent.
  const app = await testApp({ adminToken: ADMIN_TOKEN })
  const { key } = await createProject()
  await overHttp(app)
  const body = JSON.stringify({ title: 'Old client' })
  const http10 = await rawExchange(app, `POST /v1/changelog HTTP/1.0\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n${body}`, { keepOpen: true })
  t.match(http10, /^HTTP\/1\.1 201 /, 'HTTP/1.0: no 100, the write answered')
  const listed = await rawExchange(app, `POST /v1/changelog HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nExpect: 100-continue, x\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`, { keepOpen: true })
  t.match(listed, /^HTTP\/1\.1 400 [^]*"path":"\/Expect"/, 'a list: refused without its body')
})

t.test('a request that cannot be read, pipelined behind one being answered: that one gets its own answer, then the connection closes', async (t) => {
  // The 400 for the second went out as the first one's answer, under its request id (found by a review).
  const app = await testApp()
  await overHttp(app)
  const answer = await rawExchange(app, 'GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1 x\r\nHost: a\r\n\r\n', { keepOpen: true })
  t.match(answer, /^HTTP\/1\.1 200 [^]*\r\nconnection: close\r\n[^]*\{"status":"ok"\}$/, 'the first request: its 200, saying the connection closes')
  t.equal(answer.match(/HTTP\/1\.1 /g)?.length, 1, 'and nothing after it')
})
