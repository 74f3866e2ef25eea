// At most 10 endpoints per project: the 11th is 409 limit_exceeded, and concurrent creates never
// make an 11th (the project's row is locked while a create counts). The race needs real
// concurrency, so its test runs on PostgreSQL whatever the other tests run on.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { pgApp, proProject } from '../reliability/fixtures/pg.js'
import { createEndpoint, HOOK_URL } from './helpers.js'

t.test('the 11th endpoint is 409 limit_exceeded; deleting one makes room', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const other = await createProject()
  const ids: string[] = []
  for (let i = 0; i < 10; i++) ids.push((await createEndpoint(t, app, key, { description: `endpoint ${i}` })).id)
  const eleventh = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL } })
  t.same([eleventh.status, eleventh.json.code], [409, 'limit_exceeded'])
  t.match(eleventh.json.detail, /at most 10 webhook endpoints/)
  t.notOk('secret' in eleventh.json)
  t.equal((await call(t, app, { url: '/v1/webhook-endpoints?limit=100', key })).json.data.length, 10, 'still 10')
  // Disabled endpoints count too: the limit is on endpoints, not on deliveries.
  await call(t, app, { method: 'PATCH', url: `/v1/webhook-endpoints/${ids[0]}`, key, body: { enabled: false } })
  t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL } })).status, 409, 'a disabled endpoint counts')
  t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key: other.key, body: { url: HOOK_URL } })).status, 201, "another project's limit is its own")
  t.equal((await call(t, app, { method: 'DELETE', url: `/v1/webhook-endpoints/${ids[3]}`, key })).status, 204)
  t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL } })).status, 201, 'room again after a delete')
  t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL } })).status, 409)
})

t.test('PostgreSQL: concurrent creates at 9 endpoints make exactly 10, never 11 or a 500', async (t) => {
  const { app, handle } = await pgApp(t, { label: 'webhook-limit', poolSize: 10 })
  for (let round = 0; round < 3; round++) {
    const { key } = await proProject(handle.db, `Webhook limit ${round}`)
    for (let i = 0; i < 9; i++) t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL } })).status, 201)
    const racers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: `${HOOK_URL}/${i}` } })),
    )
    const statuses = racers.map((r) => r.status)
    t.equal(statuses.filter((s) => s === 201).length, 1, `round ${round}: one 201`)
    t.equal(statuses.filter((s) => s === 409).length, 11, `round ${round}: eleven 409`)
    t.ok(racers.filter((r) => r.status === 409).every((r) => r.json.code === 'limit_exceeded'))
    const list = await call(t, app, { url: '/v1/webhook-endpoints?limit=100', key })
    t.equal(list.json.data.length, 10, `round ${round}: exactly 10 endpoints`)
  }
})
