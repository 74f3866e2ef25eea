import t from 'tap'
import { call, testApp } from '../helpers/app.js'

t.test('GET /healthz answers without a key and without the database', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { url: '/healthz' })
  t.equal(res.status, 200)
  t.same(res.json, { status: 'ok' })
})

t.test('GET /readyz answers 200 while the database answers', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { url: '/readyz' })
  t.equal(res.status, 200)
})

t.test('unknown query parameters are refused on every operation', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { url: '/healthz?verbose=1' })
  t.equal(res.status, 400)
  t.equal(res.json.code, 'validation_failed')
  t.same(res.json.errors, [{ in: 'query', path: '/verbose', message: 'is not a parameter of this operation, which takes none' }])
})
