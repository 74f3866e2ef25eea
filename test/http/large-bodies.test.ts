// Bodies of many small parts, up to the 1 MiB limit: each is refused as the client's mistake,
// at once and with nothing written, never a 500 and never a parse that holds the event loop
// (found by an outside review: a JSON array of 200,000 elements overflowed the parser's stack,
// and a form of one field repeated 20,000 times took 15 s to parse). The form is thirteen times
// that many repeats, which would take hours if parsed in quadratic time: its answer comes at
// once or not within the test's timeout.
import t from 'tap'
import { BODY_LIMIT } from '../../src/app.js'
import { parseForm } from '../../src/http/form-parser.js'
import { call, createProject, testApp } from '../helpers/app.js'

/** `part` repeated, joined by `separator`, as long as fits in `bytes`. */
const repeated = (part: string, separator: string, bytes: number) => Array(Math.floor(bytes / (part.length + separator.length))).fill(part).join(separator)

t.test('a JSON array of 250,000 elements is checked like any other body', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const labels = repeated('0', ',', 500_000)
  const write = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: `{"title":"x","labels":[${labels}]}` })
  t.same([write.status, write.json.code], [400, 'validation_failed'], 'POST /v1/changelog: the schema refuses the labels')
  t.same((await call(t, app, { url: '/v1/changelog?status=all', key })).json.data, [], 'nothing was written')
  const array = `[${repeated('0', ',', 500_000)}]`
  const portal = await call(t, app, { method: 'POST', url: '/beta/join', body: array, headers: { 'content-type': 'application/json' } })
  t.same([portal.status, portal.json.code], [415, 'unsupported_media_type'], 'a portal form sent as JSON')
  const unknown = await app.inject({ method: 'POST', url: '/no-such-path', payload: array, headers: { 'content-type': 'application/json' } })
  t.equal(unknown.statusCode, 404, 'an unknown path')
})

t.test('a form of one field repeated up to the body limit is refused', async (t) => {
  const app = await testApp()
  const body = repeated('token=a', '&', BODY_LIMIT - 10)
  const res = await call(t, app, { method: 'POST', url: '/beta/join', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.same([res.status, res.json?.code], [400, 'validation_failed'], 'a repeated field is not a value')
  const fields = parseForm(repeated('a=1', '&', BODY_LIMIT))
  t.equal((fields.a as string[]).length, Math.floor(BODY_LIMIT / 4), 'every repeat is kept, in one array')
  t.same(parseForm('a=1&b=2&a=3'), Object.assign(Object.create(null), { a: ['1', '3'], b: '2' }))
})
