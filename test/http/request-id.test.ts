import t from 'tap'
import { call, testApp } from '../helpers/app.js'

t.test('a well-formed X-Request-Id is echoed back and used in problems', async (t) => {
  const app = await testApp()
  const id = '0f8fad5b-d9cb-469f-a165-70867728950e'
  const res = await call(t, app, { url: '/v1/changelog', headers: { 'x-request-id': id } })
  t.equal(res.headers['x-request-id'], id)
  t.equal(res.json.request_id, id)
})

t.test('a missing or malformed X-Request-Id is replaced by a generated one', async (t) => {
  const app = await testApp()
  for (const given of [undefined, '', 'has spaces', 'x'.repeat(129), 'semi;colon', '<script>']) {
    const res = await call(t, app, { url: '/healthz', headers: given === undefined ? {} : { 'x-request-id': given } })
    const sent = res.headers['x-request-id'] as string
    t.match(sent, /^[0-9a-f-]{36}$/, `generated for ${JSON.stringify(given)}`)
  }
  const a = await call(t, app, { url: '/healthz' })
  const b = await call(t, app, { url: '/healthz' })
  t.not(a.headers['x-request-id'], b.headers['x-request-id'], 'each request has its own id')
  const max = 'a'.repeat(128)
  t.equal((await call(t, app, { url: '/healthz', headers: { 'x-request-id': max } })).headers['x-request-id'], max)
})
