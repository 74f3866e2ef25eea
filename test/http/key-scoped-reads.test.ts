// The reads that opt into readByKey authenticate in their own statement (src/http/guard.ts): the
// rows they find must never let a revoked key, or a project without the beta feature, through;
// and an answer without rows (an empty page, a 404, a 400) must still come after the 401 or 403
// the key earns. Every other operation has its key looked up first, reads included.
import t, { type Test } from 'tap'
import { routes, type OperationId } from '../../generated/routes.js'
import { handlers } from '../../src/handlers/index.js'
import { readByKey, readsByKey } from '../../src/http/guard.js'
import type { Handler, HandlerMap } from '../../src/http/types.js'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { ADMIN_TOKEN, call, testApp } from '../helpers/app.js'
import { statementsRun, testDatabase } from '../helpers/db.js'
import { makeRepos } from '../../src/db/repos/index.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const MISSING = {
  program: 'bp_000000000000000000000',
  tester: 'bt_000000000000000000000',
  feedback: 'fb_000000000000000000000',
  entry: 'ch_000000000000000000000',
  endpoint: 'we_000000000000000000000',
  delivery: 'wd_000000000000000000000',
  event: 'evt_000000000000000000000',
}

/** The operations whose handlers read by key, as the registry says. */
const KEY_SCOPED_READS = Object.entries(handlers)
  .filter(([, handler]) => readsByKey(handler))
  .map(([id]) => id as OperationId)

type Ids = typeof MISSING
const url = (operation: OperationId, ids: Ids): string => {
  const path = routes.find((r) => r.operationId === operation)!.path
  const kinds: [string, string][] = [['Tester', ids.tester], ['Feedback', ids.feedback], ['Changelog', ids.entry], ['Delivery', ids.delivery], ['Endpoint', ids.endpoint], ['Event', ids.event]]
  return path
    .replace('{program_id}', ids.program)
    .replace('{endpoint_id}', ids.endpoint)
    .replace('{id}', kinds.find(([kind]) => operation.includes(kind))?.[1] ?? ids.program)
}
/** Reads outside /v1/beta need no beta feature. */
const needsBeta = (operation: OperationId) => routes.find((r) => r.operationId === operation)!.tag === 'beta'

/** A project (through the operator API, so its key can be revoked) with one of everything, and a second key. */
async function world(t: Test, handlers: Partial<HandlerMap> = {}) {
  const app = await testApp({}, Object.keys(handlers).length ? { handlers } : {})
  const created = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Reads', plan: 'pro', beta_enabled: true } })
  const projectId = created.json.data.id as string
  const issued = await call(t, app, { method: 'POST', url: `/admin/v1/projects/${projectId}/api-keys`, headers: admin })
  const key = issued.json.api_key as string
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Reads', status: 'active' } })
  const tester = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: 'ada@example.com' } })
  const repos = makeRepos((await testDatabase()).db)
  const feedback = await repos.feedback.seed({ projectId, programId: program.json.data.id, testerId: tester.json.data.id, body: 'Works', rating: 5 })
  const entry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Out', status: 'published' } })
  const endpoint = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: 'https://hooks.example.com/reads' } })
  const delivery = await call(t, app, { method: 'POST', url: `/v1/webhook-endpoints/${endpoint.json.data.id}/test`, key })
  const ids: Ids = {
    program: program.json.data.id,
    tester: tester.json.data.id,
    feedback: feedback.id,
    entry: entry.json.data.id,
    endpoint: endpoint.json.data.id,
    delivery: delivery.json.data.id,
    event: delivery.json.data.event_id,
  }
  return {
    app,
    key,
    ids,
    revoke: () => call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${projectId}/api-keys/${issued.json.data.id}`, headers: admin }),
    setProject: (body: object) => call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${projectId}`, headers: admin, body }),
  }
}

t.test('only GETs secured by an API key read by key', async (t) => {
  const gets = new Set(routes.filter((r) => r.method === 'GET' && r.security === 'ApiKey').map((r) => r.operationId))
  t.ok(KEY_SCOPED_READS.length > 0)
  for (const operation of KEY_SCOPED_READS) t.ok(gets.has(operation), `${operation}: no write is ever read by key alone, writes need the plan check`)
  // The compiler refuses readByKey on any other operation; a handler built around it is refused at start-up.
  const build = async (overrides: Partial<HandlerMap>) => buildApp({ ...defaults, logLevel: 'silent' }, await testDatabase(), { handlers: overrides })
  const write = readByKey(handlers.getChangelogEntry as never) as unknown as Handler<'createChangelogEntry'>
  await t.rejects(build({ createChangelogEntry: write }), /createChangelogEntry \(POST, ApiKey\) cannot read by key/)
  const portal = readByKey(handlers.getChangelogEntry as never) as unknown as Handler<'getPortalChangelogPage'>
  await t.rejects(build({ getPortalChangelogPage: portal }), /getPortalChangelogPage \(GET, none\) cannot read by key/)
})

t.test('a read that does not opt in has its key looked up first, like a write', async (t) => {
  // An answer computed without reading the key's rows (as a count or a summary would be): were it
  // read by key, a revoked key would get it, 200, once its key had a budget in the window.
  const seen: unknown[] = []
  const at = new Date(0).toISOString()
  const summary = { id: 'ch_000000000000000000000', title: 'Summary', body: '', labels: [], published_at: at, locale: 'en', version: '1.0.0', created_at: at, updated_at: at, status: 'published' as const }
  const aggregate: Handler<'listChangelogEntries'> = async ({ principal, query }) => {
    seen.push(principal)
    return { status: 200, body: { data: [summary], pagination: { limit: query.limit ?? 20, offset: 0, has_more: false, next_cursor: null } } }
  }
  const overrides: Partial<HandlerMap> = { listChangelogEntries: aggregate }
  const w = await world(t, overrides)
  const statements = statementsRun(t)
  for (let i = 0; i < 2; i++) {
    statements.clear()
    t.equal((await call(t, w.app, { url: '/v1/changelog', key: w.key })).status, 200)
    t.equal(statements.list().length, 1, 'the guard looks the key up on every request, counted or not')
  }
  t.same(seen.map((p) => typeof (p as { projectId?: unknown })?.projectId), ['string', 'string'], 'the handler gets the key\'s project')
  t.equal((await w.revoke()).status, 204)
  const res = await call(t, w.app, { url: '/v1/changelog', key: w.key })
  t.same([res.status, res.json.code], [401, 'unauthorized'], 'a revoked key is refused before the handler runs')
  t.equal(seen.length, 2)
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
    if (!needsBeta(operation)) t.equal(res.status, 200, `${operation} needs no beta feature`)
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
