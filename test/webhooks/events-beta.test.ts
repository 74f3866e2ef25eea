// The events of the beta area (api-contract §10): each written with the change that causes it,
// only when something changed, its data the record the resource's GET returns at that moment.
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { testerRecord } from '../../src/handlers/beta-testers.js'
import { call, createProject, testApp, type TestProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { deliveriesOf, eventTypes, projectEvents, subscribe } from '../helpers/events.js'
import { FORM, answer, form } from '../portal/beta-helpers.js'

const PUBLIC_BASE_URL = 'https://feedback.example.com'
// Every event's data holds join_url, which only a configured public address fills in.
const ownApp = () => testApp({ publicBaseUrl: PUBLIC_BASE_URL, logLevel: 'silent' })

async function program(t: Test, app: FastifyInstance, project: TestProject, fields: Record<string, unknown> = {}) {
  const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: project.key, body: { name: 'Events beta', status: 'active', ...fields } })
  return res.json.data as { id: string; slug: string }
}

const testersUrl = (programId: string) => `/v1/beta/programs/${programId}/testers`

async function enroll(t: Test, app: FastifyInstance, project: TestProject, programId: string, email: string, headers: Record<string, string> = {}) {
  return call(t, app, { method: 'POST', url: testersUrl(programId), key: project.key, body: { email }, headers })
}

/** The tester's record as GET returns it now, with its ETag. */
async function current(t: Test, app: FastifyInstance, project: TestProject, programId: string, testerId: string) {
  const res = await call(t, app, { url: `${testersUrl(programId)}/${testerId}`, key: project.key })
  t.equal(res.status, 200)
  return { data: res.json.data, etag: res.headers.etag as string }
}

t.test('an enrollment that creates a tester records beta_tester.enrolled: the record its GET returns', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const created = await enroll(t, app, project, programId, ' Ada@Example.com ')
  t.equal(created.status, 201)
  const [event, ...more] = await projectEvents(project.id)
  t.same(more, [], 'one event')
  t.match(event, { type: 'beta_tester.enrolled', id: /^evt_[0-9A-Za-z]{21}$/ })
  t.same(event!.data, (await current(t, app, project, programId, created.json.data.id)).data, 'data is the GET body')
  t.same(event!.data, created.json.data, 'and the 201 body')
  t.equal(event!.data.join_url, `${PUBLIC_BASE_URL}/beta/join?token=${created.json.data.token}`)
  t.ok(Date.parse(event!.created_at) >= Date.parse(event!.data.invited_at), 'written with the tester')
})

t.test('an enrollment that creates nothing records nothing: 200 for an email already there, 400, 404, 409', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  t.equal((await enroll(t, app, project, programId, 'grace@example.com')).status, 201)
  t.equal((await enroll(t, app, project, programId, 'GRACE@example.com')).status, 200)
  t.equal((await enroll(t, app, project, programId, 'not an email')).status, 400)
  t.equal((await enroll(t, app, project, 'bp_AAAAAAAAAAAAAAAAAAAAA', 'a@example.com')).status, 404)
  const { id: closed } = await program(t, app, project, { status: 'closed' })
  const refused = await enroll(t, app, project, closed, 'late@example.com')
  t.equal(refused.status, 409)
  t.equal(refused.json.code, 'program_closed')
  t.same(await eventTypes(project.id), ['beta_tester.enrolled'], 'only the first enrollment')
})

t.test('concurrent enrollments of one email record one event, for the one 201', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => enroll(t, app, project, programId, i % 2 ? 'Race@Example.com' : 'race@example.com')))
  const created = results.filter((res) => res.status === 201)
  t.equal(created.length, 1)
  t.equal(results.filter((res) => res.status === 200).length, 19)
  const events = await projectEvents(project.id)
  t.same(
    events.map((event) => event.data),
    created.map((res) => res.json.data),
  )
})

t.test('an Idempotency-Key replay records no second event; a failed keyed request none at all', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const headers = { 'idempotency-key': 'enroll-once' }
  const first = await enroll(t, app, project, programId, 'keyed@example.com', headers)
  t.equal(first.status, 201)
  const replay = await enroll(t, app, project, programId, 'keyed@example.com', headers)
  t.equal(replay.status, 201)
  t.equal(replay.headers['idempotency-replayed'], 'true')
  const events = await projectEvents(project.id)
  t.equal(events.length, 1)
  t.same(events[0]!.data, first.json.data, 'the keyed request wrote its event in its transaction')

  t.equal((await enroll(t, app, project, programId, 'keyed@example.com', { 'idempotency-key': 'enroll-again' })).status, 200)
  const { id: closed } = await program(t, app, project, { status: 'closed' })
  t.equal((await enroll(t, app, project, closed, 'keyed@example.com', { 'idempotency-key': 'enroll-closed' })).status, 409)
  t.equal((await projectEvents(project.id)).length, 1)
})

t.test('an enrollment writes a pending delivery for each enabled endpoint subscribed to its type, in its statement', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const named = await subscribe(project.id, ['beta_tester.enrolled'])
  const everything = await subscribe(project.id)
  await subscribe(project.id, ['beta_feedback.created'])
  await subscribe(project.id, ['*'], false)
  t.equal((await enroll(t, app, project, programId, 'subscribed@example.com')).status, 201)
  const [event] = await projectEvents(project.id)
  const deliveries = await deliveriesOf(event!.id)
  t.same(deliveries.map((d) => d.endpoint_id).sort(), [named, everything].sort())
  for (const delivery of deliveries) {
    t.match(delivery, { id: /^wd_[0-9A-Za-z]{21}$/, project_id: project.id, event_type: 'beta_tester.enrolled', status: 'pending', attempts: 0 })
    t.equal(delivery.next_attempt_at?.toISOString(), event!.created_at, 'due at once')
  }
})

t.test('the dispatcher is told of due deliveries once the enrollment has committed, and only then', async (t) => {
  const { db } = await testDatabase()
  let told = 0
  const repos = makeRepos(db, undefined, { deliveriesDue: () => told++ })
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const record = (row: Parameters<typeof testerRecord>[0]) => testerRecord(row, undefined)

  t.equal((await repos.testers.enroll(project.id, programId, 'quiet@example.com', record)).outcome, 'created')
  t.equal(told, 0, 'no endpoint, no delivery, nothing to tell')
  await subscribe(project.id)
  t.equal((await repos.testers.enroll(project.id, programId, 'loud@example.com', record)).outcome, 'created')
  t.equal(told, 1, 'a statement of its own has committed when it returns')
  t.equal((await repos.testers.enroll(project.id, programId, 'loud@example.com', record)).outcome, 'existing')
  t.equal(told, 1, 'an email already there makes no delivery')

  await repos.transaction(async (tx) => {
    t.equal((await tx.testers.enroll(project.id, programId, 'in-transaction@example.com', record)).outcome, 'created')
    t.equal(told, 1, 'not before the commit')
  })
  t.equal(told, 2, 'after it')

  await t.rejects(
    repos.transaction(async (tx) => {
      await tx.testers.enroll(project.id, programId, 'rolled-back@example.com', record)
      throw new Error('rolled back')
    }),
    /rolled back/,
  )
  t.equal(told, 2, 'a rolled-back enrollment tells nothing')
  const emails = (await projectEvents(project.id)).map((event) => event.data.email)
  t.same(emails, ['quiet@example.com', 'loud@example.com', 'in-transaction@example.com'], 'and leaves no event')
})

t.test('a public signup that creates a tester records beta_tester.enrolled; one for an email already there none', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId, slug } = await program(t, app, project, { allow_public_signup: true })
  const url = `/portal/${project.id}/beta/${slug}`
  const signup = (email: string) => call(t, app, { method: 'POST', url, body: form({ email }), headers: FORM })
  t.equal((await signup('Public@Example.com')).status, 201)
  const [tester] = (await call(t, app, { url: testersUrl(programId), key: project.key })).json.data
  const [event, ...more] = await projectEvents(project.id)
  t.same(more, [])
  t.equal(event!.type, 'beta_tester.enrolled')
  t.same(event!.data, (await current(t, app, project, programId, tester.id)).data, 'the GET body')
  t.match(event!.data, { source: 'public', status: 'joined', join_url: `${PUBLIC_BASE_URL}/beta/join?token=${tester.token}` })

  t.equal((await signup('public@example.com')).status, 200)
  t.equal((await signup('not an email')).status, 400)
  t.same(await eventTypes(project.id), ['beta_tester.enrolled'])
})

t.test('the join page records joined and declined when the status changes, and nothing when it does not', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const ada = (await enroll(t, app, project, programId, 'ada@example.com')).json.data
  const bob = (await enroll(t, app, project, programId, 'bob@example.com')).json.data
  const after = async (action: string, tester: { id: string; token: string }, status: number) => {
    const before = (await projectEvents(project.id)).length
    t.equal((await answer(t, app, tester.token, action)).status, status, `${action} → ${status}`)
    const added = (await projectEvents(project.id)).slice(before)
    return { added, now: (await current(t, app, project, programId, tester.id)).data }
  }

  const joined = await after('accept', ada, 200)
  t.same(joined.added.map((e) => [e.type, e.data]), [['beta_tester.joined', joined.now]], 'invited → joined, the GET body')
  t.equal(joined.now.status, 'joined')
  t.same((await after('accept', ada, 200)).added, [], 'joined → joined: none')
  t.same((await after('decline', ada, 409)).added, [], 'a joined tester cannot decline: none')

  const declined = await after('decline', bob, 200)
  t.same(declined.added.map((e) => [e.type, e.data]), [['beta_tester.declined', declined.now]], 'invited → declined')
  t.same((await after('decline', bob, 200)).added, [], 'declined → declined: none')
  const changedMind = await after('accept', bob, 200)
  t.same(changedMind.added.map((e) => [e.type, e.data]), [['beta_tester.joined', changedMind.now]], 'declined → joined')

  const carol = (await enroll(t, app, project, programId, 'carol@example.com')).json.data
  await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${programId}`, key: project.key, body: { status: 'closed' } })
  t.same((await after('accept', carol, 409)).added, [], 'a closed program: none')
})

t.test('PATCH records revoked and restored when the status changes; no-ops, 409 and 412 record nothing', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const tester = (await enroll(t, app, project, programId, 'patched@example.com')).json.data
  const url = `${testersUrl(programId)}/${tester.id}`
  const patch = async (body: Record<string, unknown>, status: number, headers: Record<string, string> = {}) => {
    const before = (await projectEvents(project.id)).length
    const res = await call(t, app, { method: 'PATCH', url, key: project.key, body, headers })
    t.equal(res.status, status, `${JSON.stringify(body)} → ${status}`)
    return { res, added: (await projectEvents(project.id)).slice(before) }
  }

  const stale = (await current(t, app, project, programId, tester.id)).etag
  const revoked = await patch({ status: 'revoked' }, 200)
  t.same(revoked.added.map((e) => [e.type, e.data]), [['beta_tester.revoked', revoked.res.json.data]])
  t.same(revoked.added[0]!.data, (await current(t, app, project, programId, tester.id)).data, 'the GET body')
  t.same((await patch({ status: 'revoked' }, 200)).added, [], 'revoked → revoked: none')
  t.same((await patch({}, 200)).added, [], 'an empty PATCH: none')
  t.same((await patch({ status: 'invited' }, 412, { 'if-match': stale })).added, [], 'a stale If-Match: none')

  const { etag } = await current(t, app, project, programId, tester.id)
  const restored = await patch({ status: 'invited' }, 200, { 'if-match': etag })
  t.same(restored.added.map((e) => [e.type, e.data]), [['beta_tester.restored', restored.res.json.data]])
  t.same(restored.added[0]!.data, (await current(t, app, project, programId, tester.id)).data)
  t.same((await patch({ status: 'invited' }, 200)).added, [], 'invited → invited: none')

  t.equal((await answer(t, app, tester.token, 'accept')).status, 200)
  const refused = await patch({ status: 'invited' }, 409)
  t.equal(refused.res.json.code, 'invalid_transition')
  t.same(refused.added, [], 'an invalid transition: none')
  t.same(await eventTypes(project.id), ['beta_tester.enrolled', 'beta_tester.revoked', 'beta_tester.restored', 'beta_tester.joined'])
})

t.test('feedback written on the portal records beta_feedback.created: the record its GET returns', async (t) => {
  const app = await ownApp()
  const project = await createProject()
  const { id: programId } = await program(t, app, project)
  const tester = (await enroll(t, app, project, programId, 'writer@example.com')).json.data
  const send = (body: string, rating = '') => call(t, app, { method: 'POST', url: '/beta/feedback', body: form({ token: tester.token, body, rating }), headers: FORM })

  t.equal((await send('Before joining')).status, 409, 'not joined yet')
  t.equal((await answer(t, app, tester.token, 'accept')).status, 200)
  t.equal((await send('   ')).status, 400, 'empty')
  const before = (await projectEvents(project.id)).length
  t.equal((await send('Dark mode, please.', '4')).status, 200)
  const added = (await projectEvents(project.id)).slice(before)
  t.equal(added.length, 1)
  t.equal(added[0]!.type, 'beta_feedback.created')
  const got = await call(t, app, { url: `/v1/beta/programs/${programId}/feedback/${added[0]!.data.id}`, key: project.key })
  t.equal(got.status, 200)
  t.same(added[0]!.data, got.json.data, 'the GET body')
  t.match(added[0]!.data, { beta_tester_id: tester.id, body: 'Dark mode, please.', rating: 4 })
  t.same(await eventTypes(project.id), ['beta_tester.enrolled', 'beta_tester.joined', 'beta_feedback.created'])
})
