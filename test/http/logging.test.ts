// One structured JSON line per request, with its request id, and never a secret.
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { ADMIN_TOKEN, call, createProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

t.test('each request logs one JSON line with its id, status and route, and no secret', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean))
      done()
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'info', adminToken: ADMIN_TOKEN }, await testDatabase(), { logger: { stream } })
  t.teardown(() => app.close())
  const { key } = await createProject()

  const requests = [
    { url: '/v1/changelog?locale=en', headers: { authorization: `Bearer ${key}`, 'x-request-id': 'req-1' } },
    { url: '/v1/changelog', headers: { authorization: `Bearer ${key}x`, 'x-request-id': 'req-2' } },
    { method: 'POST' as const, url: '/admin/v1/projects', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-request-id': 'req-3' }, body: { name: 'Logged' } },
  ]
  const created: string[] = []
  for (const r of requests) {
    const res = await call(t, app, r)
    if (res.status === 201) created.push(res.json.api_key)
  }
  const entries = lines.map((l) => JSON.parse(l))
  const perRequest = entries.filter((e) => e.msg === 'request')
  t.same(perRequest.map((e) => e.request_id), ['req-1', 'req-2', 'req-3'], 'one line per request, in order')
  t.match(perRequest[0], { method: 'GET', route: '/v1/changelog', status: 200 })
  t.equal(perRequest[1].status, 401)
  const all = lines.join('\n')
  for (const secret of [key, ADMIN_TOKEN, ...created]) t.notOk(all.includes(secret), 'no secret in the log')
})
