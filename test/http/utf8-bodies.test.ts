// Bodies are UTF-8: JSON by its RFC (8259 §8.1, which defines no charset parameter), portal forms
// as a page's form sends them (percent-encoded UTF-8). Bytes that are not were decoded with U+FFFD
// in their place and stored so, and a form's `%zz` was stored as typed (found by an outside
// review); now each is a 400, and nothing is written.
import t from 'tap'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { overHttp } from '../helpers/over-http.js'
import { specProblems } from '../helpers/spec-check.js'

/** A title holding `raw` bytes as they are. */
const titled = (raw: number[]) => Buffer.concat([Buffer.from('{"title":"a'), Buffer.from(raw), Buffer.from('"}')])

t.test('a JSON body that is not UTF-8 is invalid JSON, whatever charset it names', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const latin1 = titled([0xe9]) // é in Latin-1
  const cases: [string, Buffer, string][] = [
    ['Latin-1 bytes', latin1, 'application/json'],
    ['Latin-1 bytes, said to be Latin-1', latin1, 'application/json; charset=iso-8859-1'],
    ['an encoded surrogate (CESU-8)', titled([0xed, 0xa0, 0x80]), 'application/json'],
    ['a cut-off sequence', titled([0xe2, 0x82]), 'application/json'],
  ]
  for (const [what, body, type] of cases) {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body, headers: { 'content-type': type } })
    t.equal(res.status, 400, what)
    t.equal(res.json.code, 'invalid_json', what)
  }
  t.same((await call(t, app, { url: '/v1/changelog?status=all', key })).json.data, [], 'nothing was written')

  const utf8 = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: Buffer.from('{"title":"café ☕ 𝄞"}', 'utf8'), headers: { 'content-type': 'application/json; charset=utf-8' } })
  t.equal(utf8.status, 201, 'UTF-8, with or without its charset')
  t.equal(utf8.json.data.title, 'café ☕ 𝄞')
})

t.test('a portal form that is not percent-encoded UTF-8 is refused before anything is looked up', async (t) => {
  const app = await testApp()
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  for (const [what, body] of [
    ['an escape of no hex digits', 'token=nobody&body=a%zzb'],
    ['an escape cut short', 'token=nobody&body=a%E2%82'],
    ['an encoded surrogate', 'token=nobody&body=a%ED%A0%80b'],
    ['a raw byte that is not UTF-8', Buffer.concat([Buffer.from('token=nobody&body=caf'), Buffer.from([0xe9])])],
  ] as const) {
    const res = await call(t, app, { method: 'POST', url: '/beta/feedback', body, headers: form })
    t.equal(res.status, 400, what)
    t.match(res.json, { code: 'validation_failed', errors: [{ in: 'body', path: '' }] }, what)
  }
  const wellFormed = await call(t, app, { method: 'POST', url: '/beta/feedback', body: 'token=nobody&body=caf%C3%A9+%E2%98%95', headers: form })
  t.equal(wellFormed.status, 404, 'a well-formed form goes on to its token, which is nobody’s')
})

t.test('a body in a content coding is a 415, after the key is checked', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const coding of ['gzip', 'br', 'deflate, gzip']) {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Coded' }, headers: { 'content-encoding': coding } })
    t.equal(res.status, 415, coding)
    t.equal(res.json.code, 'unsupported_media_type')
  }
  t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', body: { title: 'Coded' }, headers: { 'content-encoding': 'gzip' } })).status, 401, 'no key: 401 first')
  t.same((await call(t, app, { url: '/v1/changelog?status=all', key })).json.data, [], 'nothing was written')
  t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Plain' }, headers: { 'content-encoding': 'identity' } })).status, 201, 'identity is no coding')
  t.equal((await call(t, app, { url: '/v1/changelog', key, headers: { 'content-encoding': 'gzip' } })).status, 200, 'a request without a body has nothing coded')
  // The headers' own 400s come first (found by a review: the coding's 415 was checked before them).
  const badHost = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Coded' }, headers: { 'content-encoding': 'gzip', host: 'a b' } })
  t.same([badHost.status, badHost.json.errors?.[0]?.path], [400, '/Host'], 'a bad Host: the 400')
  const free = await createProject({ plan: 'free' })
  t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', key: free.key, body: { title: 'Coded' }, headers: { 'content-encoding': 'gzip' } })).status, 403, 'the free plan: 403 first')
})

t.test('a body in a transfer coding other than chunked is a 415', async (t) => {
  // Node decodes the chunked framing and passed the gzip bytes under it on as the body.
  const send = await overHttp(await testApp({ adminToken: ADMIN_TOKEN }))
  const { key } = await createProject()
  const post = (transferEncoding: string) =>
    send({
      method: 'POST',
      path: '/v1/changelog',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'transfer-encoding': transferEncoding },
      body: JSON.stringify({ title: 'Framed' }),
    })
  for (const coding of ['gzip, chunked', 'deflate, chunked', 'x-custom, chunked']) {
    const res = await post(coding)
    t.same([res.status, JSON.parse(res.body).code], [415, 'unsupported_media_type'], coding)
  }
  t.equal((await post('chunked')).status, 201, 'chunked alone is framing, not a coding')
  const listed = await call(t, await testApp(), { url: '/v1/changelog?status=all', key })
  t.same(listed.json.data.map((entry: { title: string }) => entry.title), ['Framed'], 'only that one was written')
})


t.test('without a Content-Type, a chunked body that holds nothing is no body; a byte in it is a 415', async (t) => {
  // Node's http.request frames a POST without a body this way; the conventions let an action's body be omitted.
  const app = await testApp()
  const send = await overHttp(app)
  const { key } = await createProject()
  const chunked = (method: string, path: string, body = '', headers: Record<string, string> = {}) =>
    send({ method, path, headers: { authorization: `Bearer ${key}`, 'transfer-encoding': 'chunked', ...headers }, body }).then((res) => {
      t.same(specProblems(method, path, { statusCode: res.status, headers: res.headers, body: res.body }), [], `${method} ${path} → ${res.status} matches openapi.yaml`)
      return res
    })
  const entry = (await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Framed' } })).json.data as { id: string }
  t.equal((await chunked('DELETE', '/v1/changelog/ch_aaaaaaaaaaaaaaaaaaaaa')).status, 404, 'an unknown id is a 404, not a 415')
  const missing = (await chunked('POST', '/v1/changelog')).body
  t.equal(JSON.parse(missing).code, 'validation_failed', 'an operation that needs a body says so, as to a request without one')
  for (const [body, headers, what] of [
    ['{}', {}, 'a byte without a Content-Type'],
    ['', { 'content-type': 'text/plain' }, 'a Content-Type other than JSON, even with nothing in it'],
  ] as const) {
    const refused = await chunked('DELETE', `/v1/changelog/${entry.id}`, body, headers)
    t.same([refused.status, JSON.parse(refused.body).code], [415, 'unsupported_media_type'], what)
  }
  t.equal((await chunked('DELETE', `/v1/changelog/${entry.id}`)).status, 204, 'the entry is deleted by a request whose body holds nothing')
})
