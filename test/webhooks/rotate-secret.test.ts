// POST /v1/webhook-endpoints/{id}/rotate-secret: a new secret, answered this once; the one it
// replaces is kept as the previous secret for 24 hours (deliveries carry both signatures then).
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { createEndpoint, endpointRow, SECRET, storedAnswers } from './helpers.js'

const DAY = 86_400_000

t.test('200: the record unchanged and a new secret; the old one is the previous secret for 24 hours', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  const before = await call(t, app, { url: created.url, key })
  const started = Date.now()
  const res = await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key })
  t.equal(res.status, 200)
  t.same(Object.keys(res.json).sort(), ['data', 'secret'])
  t.match(res.json.secret, SECRET)
  t.not(res.json.secret, created.secret)
  t.same(res.json.data, before.json.data, 'the record is the same')
  const row = await endpointRow(created.id)
  t.equal(row!.secret, res.json.secret)
  t.equal(row!.previous_secret, created.secret)
  const expires = row!.previous_secret_expires_at!.getTime()
  t.ok(expires >= started + DAY - 2000 && expires <= Date.now() + DAY + 2000, `the previous secret expires in 24 hours (${row!.previous_secret_expires_at!.toISOString()})`)

  const after = await call(t, app, { url: created.url, key })
  t.notOk(after.raw.includes('whsec_'), 'a read shows neither secret')
  t.equal(after.headers.etag, before.headers.etag, 'nothing shown changed')
})

t.test('rotating again within the 24 hours replaces the previous secret by the one rotated out', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key)
  const first = await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key, body: {} })
  const second = await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key })
  t.equal(second.status, 200)
  const row = await endpointRow(created.id)
  t.equal(row!.secret, second.json.secret)
  t.equal(row!.previous_secret, first.json.secret, 'the first rotation’s secret, not the original')
  t.not(row!.previous_secret, created.secret)
})

t.test('a disabled endpoint may rotate; the body must be empty; an Idempotency-Key replays the same secret', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await createEndpoint(t, app, key, { enabled: false })
  t.equal((await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key })).status, 200)
  const bad = await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key, body: { secret: 'whsec_mine' } })
  t.same([bad.status, bad.json.code], [400, 'validation_failed'])
  const once = await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key, headers: { 'idempotency-key': 'rotate-1' } })
  const replay = await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key, headers: { 'idempotency-key': 'rotate-1' } })
  t.equal(replay.headers['idempotency-replayed'], 'true')
  t.equal(replay.json.secret, once.json.secret)
  t.equal((await endpointRow(created.id))!.secret, once.json.secret, 'rotated once')
})

t.test('an Idempotency-Key keeps no secret: a replay answers the secret while it is the one rotated in, 409 after another rotation, 404 once the endpoint is deleted', async (t) => {
  const app = await testApp()
  const project = await createProject()
  const { key } = project
  const created = await createEndpoint(t, app, key)
  const rotate = () => call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key, headers: { 'idempotency-key': 'rotate-2' } })
  const once = await rotate()
  t.equal(once.status, 200)
  t.notOk((await storedAnswers(project.id)).some((row) => row.response_body?.includes('whsec_')), 'no secret in the idempotency table')
  t.equal((await rotate()).json.secret, once.json.secret, 'the replay answers the secret')

  const later = await call(t, app, { method: 'POST', url: `${created.url}/rotate-secret`, key })
  const replay = await rotate()
  t.same([replay.status, replay.json.code], [409, 'secret_rotated'], 'after another rotation, the replay is refused')
  t.notMatch(replay.raw, /whsec_/, 'showing no secret')
  t.equal((await endpointRow(created.id))!.secret, later.json.secret, 'the later rotation stands')

  await call(t, app, { method: 'DELETE', url: created.url, key })
  const gone = await rotate()
  t.same([gone.status, gone.json.code], [404, 'not_found'])
})

t.test("another project's, a missing or a malformed id: 404; the free plan: 403", async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  const ofA = await createEndpoint(t, app, a.key)
  for (const id of [ofA.id, 'we_000000000000000000000', 'nope']) {
    const res = await call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${id}/rotate-secret`, key: b.key })
    t.same([res.status, res.json.code], [404, 'not_found'], id)
  }
  const free = await createProject({ plan: 'free' })
  t.equal((await call(t, app, { method: 'POST', url: `${ofA.url}/rotate-secret`, key: free.key })).status, 403)
  t.equal((await endpointRow(ofA.id))!.secret, ofA.secret, "A's secret is unchanged")
})
