// POST /v1/webhook-endpoints: the endpoint and its secret, shown this once; the subscription as
// stored; the plan and the body's rules.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { createEndpoint, endpointRow, HOOK_URL, SECRET, storedAnswers } from './helpers.js'

t.test('201: the record with its defaults, Location, and the secret', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { res, id, secret } = await createEndpoint(t, app, key)
  t.equal(res.status, 201)
  t.equal(res.headers.location, `/v1/webhook-endpoints/${id}`)
  t.match(id, /^we_[0-9A-Za-z]{21}$/)
  t.same(Object.keys(res.json).sort(), ['data', 'secret'])
  t.match(secret, SECRET, 'whsec_ and the base64 of 32 bytes')
  t.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32)
  const data = res.json.data
  t.same(
    { url: data.url, events: data.events, description: data.description, enabled: data.enabled, disabled_reason: data.disabled_reason },
    { url: HOOK_URL, events: ['*'], description: null, enabled: true, disabled_reason: null },
    'every type, enabled, no description',
  )
  t.equal(data.created_at, data.updated_at)
  t.notOk('secret' in data, 'the record itself has no secret')
  t.equal((await endpointRow(id))!.secret, secret, 'the secret stored is the one answered')
})

t.test('every field sent is stored as sent; each create has a secret of its own', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const body = { url: 'http://HOOKS.example.com:8080/in?source=feedback', events: ['beta_tester.joined'], description: 'Staging', enabled: false }
  const a = await createEndpoint(t, app, key, body)
  t.same(
    { url: a.data.url, events: a.data.events, description: a.data.description, enabled: a.data.enabled, disabled_reason: a.data.disabled_reason },
    { ...body, disabled_reason: null },
    'disabled at creation: by the team, so no reason',
  )
  const b = await createEndpoint(t, app, key, { description: null })
  t.equal(b.data.description, null)
  t.not(a.secret, b.secret)
})

t.test('events: de-duplicated in first-seen order, and * alone when it is there', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const cases: [string[], string[]][] = [
    [['beta_tester.joined', 'changelog_entry.published', 'beta_tester.joined'], ['beta_tester.joined', 'changelog_entry.published']],
    [['changelog_entry.published', 'beta_feedback.created', 'changelog_entry.published', 'beta_feedback.created'], ['changelog_entry.published', 'beta_feedback.created']],
    [['beta_tester.joined', '*', 'beta_tester.revoked'], ['*']],
    [['*', '*'], ['*']],
    [['webhook.test'], ['webhook.test']],
  ]
  for (const [events, stored] of cases) {
    const { data, id } = await createEndpoint(t, app, key, { events })
    t.same(data.events, stored, JSON.stringify(events))
    t.same((await call(t, app, { url: `/v1/webhook-endpoints/${id}`, key })).json.data.events, stored, 'and read back so')
    await call(t, app, { method: 'DELETE', url: `/v1/webhook-endpoints/${id}`, key })
  }
})

t.test('400 for an unknown event type, an empty list, a long description, unknown or server-owned fields', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const refused: [Record<string, unknown>, string][] = [
    [{ url: HOOK_URL, events: ['beta_tester.exploded'] }, '/events/0'],
    [{ url: HOOK_URL, events: ['beta_tester.joined', 'Beta_Tester.Joined'] }, '/events/1'],
    [{ url: HOOK_URL, events: [] }, '/events'],
    [{ url: HOOK_URL, events: '*' }, '/events'],
    [{ url: HOOK_URL, events: null }, '/events'],
    [{ url: HOOK_URL, description: 'x'.repeat(501) }, '/description'],
    [{ url: HOOK_URL, enabled: 'yes' }, '/enabled'],
    [{ url: HOOK_URL, enabled: null }, '/enabled'],
    [{ url: HOOK_URL, secret: 'whsec_mine' }, '/secret'],
    [{ url: HOOK_URL, id: 'we_000000000000000000000' }, '/id'],
    [{ url: HOOK_URL, disabled_reason: 'gone' }, '/disabled_reason'],
    [{ events: ['*'] }, '/url'],
    [{ url: 42 }, '/url'],
  ]
  for (const [body, path] of refused) {
    const res = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body })
    t.equal(res.status, 400, JSON.stringify(body))
    t.equal(res.json.code, 'validation_failed')
    t.ok(res.json.errors.some((e: { path: string }) => e.path === path), `errors[] names ${path}`)
  }
  t.equal((await call(t, app, { url: '/v1/webhook-endpoints', key })).json.data.length, 0, 'nothing was created')
  const longest = await createEndpoint(t, app, key, { description: 'é'.repeat(500) })
  t.equal(longest.data.description, 'é'.repeat(500), '500 characters are allowed')
})

t.test('the free plan may not create (403), and no key is a 401', async (t) => {
  const app = await testApp()
  const free = await createProject({ plan: 'free' })
  const res = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key: free.key, body: { url: HOOK_URL } })
  t.same([res.status, res.json.code], [403, 'plan_required'])
  const anonymous = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', body: { url: HOOK_URL } })
  t.same([anonymous.status, anonymous.json.code], [401, 'unauthorized'])
  // The project without the beta feature: webhooks do not need it.
  const noBeta = await createProject({ beta: false })
  t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key: noBeta.key, body: { url: HOOK_URL } })).status, 201)
})

t.test('an Idempotency-Key retry answers the same endpoint and secret, and creates nothing more', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const send = (body: object) => call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body, headers: { 'idempotency-key': 'create-hook-1' } })
  const first = await send({ url: HOOK_URL })
  const again = await send({ url: HOOK_URL })
  t.equal(first.status, 201)
  t.equal(again.status, 201)
  t.equal(again.headers['idempotency-replayed'], 'true')
  t.equal(again.headers.location, first.headers.location)
  t.same(again.json, first.json)
  t.equal(again.raw, first.raw, 'the very same bytes')
  t.equal((await call(t, app, { url: '/v1/webhook-endpoints', key })).json.data.length, 1)
  t.equal((await send({ url: 'https://other.example.com/' })).status, 422, 'the same key with another body')
})

/** An endpoint of a new project created with an Idempotency-Key, and `send()`, which sends that request again. */
async function createdWithKey(t: Test) {
  const app = await testApp()
  const project = await createProject()
  const { key } = project
  const send = () => call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: HOOK_URL }, headers: { 'idempotency-key': 'create-hook' } })
  return { app, project, key, send, first: await send() }
}

t.test('the secret is never stored with the answer: a replay shows the endpoint’s secret only while it is the one answered', async (t) => {
  const { app, project, key, send, first } = await createdWithKey(t)
  t.match(first.json.secret, SECRET)
  const stored = await storedAnswers(project.id)
  t.equal(stored.length, 1, 'the answer is kept for replays')
  const sha256 = createHash('sha256').update(first.json.secret).digest('hex')
  t.same(JSON.parse(stored[0]!.response_body!), { data: first.json.data, secret_sha256: sha256 }, 'the record, and the secret’s SHA-256')
  t.notOk(stored.some((row) => row.response_body?.includes('whsec_')), 'no secret in the idempotency table')

  const replay = await send()
  t.equal(replay.headers['idempotency-replayed'], 'true')
  t.equal(replay.json.secret, first.json.secret, 'the replay answers the secret, read from the endpoint')

  // Found by an outside review: the replay showed the secret a rotation had made since, which
  // this request's answer never did, to anyone holding the old Idempotency-Key.
  const rotated = await call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${first.json.data.id}/rotate-secret`, key })
  const later = await send()
  t.same([later.status, later.json.code], [409, 'secret_rotated'], 'after a rotation, a replay is refused')
  t.notOk(later.headers['idempotency-replayed'])
  t.notMatch(later.raw, /whsec_/, 'and shows no secret')
  t.equal((await endpointRow(first.json.data.id))!.secret, rotated.json.secret, 'the rotated secret stays')
  t.notOk((await storedAnswers(project.id)).some((row) => row.response_body?.includes('whsec_')), 'still none stored')

  t.equal((await call(t, app, { method: 'DELETE', url: first.headers.location as string, key })).status, 204)
  const gone = await send()
  t.same([gone.status, gone.json.code], [404, 'not_found'], 'the endpoint deleted since: its secret is gone with it')
  t.notOk(gone.headers['idempotency-replayed'])
  t.equal((await call(t, app, { url: '/v1/webhook-endpoints', key })).json.data.length, 0, 'and nothing was created again')
})

t.test('an answer stored with its secret by an earlier version: the migration strips it, and a replay answers the current secret', async (t) => {
  const { app, project, key, send, first } = await createdWithKey(t)
  const { db } = await testDatabase()
  // As the version before this one stored it: the answer as sent, the secret in it.
  await db.execute(sql`update idempotency_keys set response_body = ${first.raw} where scope = ${project.id}`)
  t.ok((await storedAnswers(project.id))[0]!.response_body!.includes(first.json.secret))
  const rotated = await call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${first.json.data.id}/rotate-secret`, key })
  t.equal((await send()).json.secret, rotated.json.secret, 'a replay never answers the stored secret')

  const migration = readFileSync(new URL('../../drizzle/0011_idempotency_answers_without_secrets.sql', import.meta.url), 'utf8')
  await db.execute(sql.raw(migration))
  const [stored] = await storedAnswers(project.id)
  t.same(JSON.parse(stored!.response_body!), { data: first.json.data }, 'the migration left the record alone')
  t.same((await send()).json, { data: first.json.data, secret: rotated.json.secret })
})
