// At most 10 endpoints per project: the 11th is 409 limit_exceeded. That concurrent creates never
// make an 11th (the project's row is locked while a create counts) needs real concurrency: its
// test is in test/reliability/concurrency.test.ts.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
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
