// The reads of /v1 authenticate in their own statement (src/http/guard.ts): the rows they find
// must never let a revoked key, or a project without the beta feature, through; and an answer
// without rows (an empty page, a 404, a 400) must still come after the 401 or 403 the key earns.
import t, { type Test } from 'tap'
import { routes } from '../../generated/routes.js'
import { KEY_SCOPED_READS, type KeyScopedRead } from '../../src/http/types.js'
import { ADMIN_TOKEN, call, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { makeRepos } from '../../src/db/repos/index.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const MISSING = { program: 'bp_000000000000000000000', tester: 'bt_000000000000000000000', feedback: 'fb_000000000000000000000', entry: 'ch_000000000000000000000' }

type Ids = typeof MISSING
const url = (operation: KeyScopedRead, ids: Ids): string => {
  const path = routes.find((r) => r.operationId === operation)!.path
  return path
    .replace('{program_id}', ids.program)
    .replace('{id}', operation.includes('Tester') ? ids.tester : operation.includes('Feedback') ? ids.feedback : operation.includes('Changelog') ? ids.entry : ids.program)
}

/** A project (through the operator API, so its key can be revoked) with one of everything, and a second key. */
async function world(t: Test) {
  const app = await testApp()
  const created = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Reads', plan: 'pro', beta_enabled: true } })
  const projectId = created.json.data.id as string
  const issued = await call(t, app, { method: 'POST', url: `/admin/v1/projects/${projectId}/api-keys`, headers: admin })
  const key = issued.json.api_key as string
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Reads', status: 'active' } })
  const tester = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: 'ada@example.com' } })
  const repos = makeRepos((await testDatabase()).db)
  const feedback = await repos.feedback.create({ projectId, programId: program.json.data.id, testerId: tester.json.data.id, body: 'Works', rating: 5 })
  const entry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Out', status: 'published' } })
  const ids: Ids = { program: program.json.data.id, tester: tester.json.data.id, feedback: feedback.id, entry: entry.json.data.id }
  return {
    app,
    key,
    ids,
    revoke: () => call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${projectId}/api-keys/${issued.json.data.id}`, headers: admin }),
    setProject: (body: object) => call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${projectId}`, headers: admin, body }),
  }
}

t.test('the key-scoped reads are exactly the GETs secured by an API key', async (t) => {
  const gets = routes.filter((r) => r.method === 'GET' && r.security === 'ApiKey').map((r) => r.operationId)
  t.same([...KEY_SCOPED_READS].sort(), gets.sort(), 'no write is ever read by key alone: writes need the plan check')
})

t.test('rows found do not let a revoked key through', async (t) => {
  const w = await world(t)
  for (const operation of KEY_SCOPED_READS) {
    const res = await call(t, w.app, { url: url(operation, w.ids), key: w.key })
    t.equal(res.status, 200, `${operation} reads with the live key`)
    if (Array.isArray(res.json.data)) t.ok(res.json.data.length > 0, `${operation} finds rows`)
  }
  t.equal((await w.revoke()).status, 204)
  for (const operation of KEY_SCOPED_READS) {
    const res = await call(t, w.app, { url: url(operation, w.ids), key: w.key })
    t.equal(res.status, 401, `${operation} refuses the revoked key at once`)
    t.equal(res.json.code, 'unauthorized')
    t.equal(res.headers['www-authenticate'], 'Bearer')
  }
})

t.test('rows found do not let a project without the beta feature read the beta area', async (t) => {
  const w = await world(t)
  t.equal((await w.setProject({ beta_enabled: false })).status, 200)
  for (const operation of KEY_SCOPED_READS) {
    const res = await call(t, w.app, { url: url(operation, w.ids), key: w.key })
    if (operation.includes('Changelog')) t.equal(res.status, 200, `${operation} needs no beta feature`)
    else t.same([res.status, res.json.code], [403, 'beta_disabled'], `${operation} is refused at once`)
  }
  t.equal((await w.setProject({ beta_enabled: true })).status, 200)
  t.equal((await call(t, w.app, { url: url('getBetaProgram', w.ids), key: w.key })).status, 200, 'and allowed again on the next request')
})

t.test('reads work on the free plan, rows and all', async (t) => {
  const w = await world(t)
  t.equal((await w.setProject({ plan: 'free' })).status, 200)
  for (const operation of KEY_SCOPED_READS) {
    t.equal((await call(t, w.app, { url: url(operation, w.ids), key: w.key })).status, 200, operation)
  }
})

t.test('an answer without rows comes after the 401 or 403 the key earns', async (t) => {
  const w = await world(t)
  const p = w.ids.program
  // Reads answered without rows, with what the live key gets: empty pages, missing ids, an id of
  // the wrong shape, queries the schema or the list refuses.
  const answers: [string, number][] = [
    ['/v1/beta/programs?status=closed', 200],
    [`/v1/beta/programs/${p}/testers?status=revoked`, 200],
    [`/v1/beta/programs/${p}/feedback?tester_id=bt_000000000000000000000`, 200],
    ...KEY_SCOPED_READS.filter((op) => op.startsWith('get')).map((op): [string, number] => [url(op, MISSING), 404]),
    ['/v1/beta/programs/nope', 404],
    ['/v1/changelog?limit=0', 400],
    ['/v1/beta/programs?cursor=nope', 400],
    [`/v1/beta/programs/${p}/testers?x=1`, 400],
  ]
  for (const [u, status] of answers) t.equal((await call(t, w.app, { url: u, key: w.key })).status, status, `${u} with the live key`)

  t.equal((await w.setProject({ beta_enabled: false })).status, 200)
  for (const [u] of answers.filter(([u]) => u.startsWith('/v1/beta'))) {
    const res = await call(t, w.app, { url: u, key: w.key })
    t.same([res.status, res.json.code], [403, 'beta_disabled'], `${u} without the beta feature`)
  }

  t.equal((await w.revoke()).status, 204)
  for (const [u] of answers) {
    const res = await call(t, w.app, { url: u, key: w.key })
    t.same([res.status, res.json.code], [401, 'unauthorized'], `${u} with the revoked key`)
  }
})
