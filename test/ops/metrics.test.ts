// GET /metrics (issue #14): Prometheus text behind ADMIN_TOKEN, with request counts and latency
// by route template, rate-limit refusals by budget, failed authentications, database outages and
// statement timeouts, pool gauges and process metrics; every label from a bounded set.
import { randomBytes, randomInt } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { bodyBudget } from '../../src/http/body-budget.js'
import { MarkdownRenderer } from '../../src/portal/markdown-rendering.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { newPgliteDataDir, newTestDatabase, OWN_DATABASE_POOL_SIZE } from '../helpers/db.js'
import { parse, scrape, value, type Exposition } from '../helpers/metrics.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const randomAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`
const someKey = () => `fbk_${randomBytes(30).toString('base64url')}`

t.test('/metrics: 404 without ADMIN_TOKEN, 401 with a wrong token, 200 Prometheus text with the right one', async (t) => {
  const off = await testApp({ adminToken: undefined })
  const missing = await call(t, off, { url: '/metrics', headers: admin })
  t.same([missing.status, missing.json.code], [404, 'not_found'], 'no operator API, no metrics')

  const app = await testApp({ logLevel: 'silent' })
  const wrong = await call(t, app, { url: '/metrics', headers: { authorization: 'Bearer not-the-admin-token-at-all' } })
  t.same([wrong.status, wrong.json.code], [401, 'unauthorized'])
  t.equal(wrong.headers['content-type'], 'application/problem+json; charset=utf-8')
  const none = await call(t, app, { url: '/metrics' })
  t.equal(none.status, 401)

  const res = await call(t, app, { url: '/metrics', headers: admin })
  t.equal(res.status, 200)
  t.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8')
  const exposition = parse(res.raw)
  for (const name of exposition.types.keys()) t.ok(exposition.help.get(name), `${name} has HELP text`)
  t.ok(exposition.help.size > 20, 'many metrics')
  t.notMatch(res.raw, ADMIN_TOKEN, 'the token is nowhere in the text')
  const query = await call(t, app, { url: '/metrics?format=json', headers: admin })
  t.equal(query.status, 400, 'an unknown query parameter is refused, as everywhere')
})

t.test('requests are counted and timed by method, route template and status', async (t) => {
  const app = await testApp({ logLevel: 'silent' })
  const { key } = await createProject()
  await scrape(t, app) // so that the scrape's own series exists before the counts below
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Counted', status: 'published' } })
  t.equal(created.status, 201)
  const id = created.json.data.id as string
  t.equal((await call(t, app, { url: `/v1/changelog/${id}`, key })).status, 200)
  t.equal((await call(t, app, { url: `/v1/changelog/${id}`, key })).status, 200)
  t.equal((await call(t, app, { url: '/v1/changelog/ch_000000000000000000000', key })).status, 404)
  t.equal((await call(t, app, { url: '/healthz' })).status, 200)

  const m = await scrape(t, app)
  t.equal(m.types.get('http_requests_total'), 'counter')
  t.equal(m.types.get('http_request_duration_seconds'), 'histogram')
  t.equal(value(m, 'http_requests_total', { method: 'POST', route: '/v1/changelog', status: 201 }), 1)
  t.equal(value(m, 'http_requests_total', { method: 'GET', route: '/v1/changelog/:id', status: 200 }), 2, 'both reads of one template, whatever the id')
  t.equal(value(m, 'http_requests_total', { method: 'GET', route: '/v1/changelog/:id', status: 404 }), 1)
  t.equal(value(m, 'http_requests_total', { method: 'GET', route: '/healthz', status: 200 }), 1)
  t.equal(value(m, 'http_requests_total', { method: 'GET', route: '/metrics', status: 200 }), 1, 'the scrape before counts too')
  const reads = { method: 'GET', route: '/v1/changelog/:id', status: 200 }
  t.equal(value(m, 'http_request_duration_seconds_count', reads), 2)
  t.equal(value(m, 'http_request_duration_seconds_bucket', { ...reads, le: '+Inf' }), 2)
  t.ok(value(m, 'http_request_duration_seconds_sum', reads)! > 0)
  t.ok(m.samples.some((s) => s.name === 'http_request_duration_seconds_bucket' && s.labels.le === '0.001'), 'buckets start at a millisecond')
  t.notOk(m.samples.some((s) => s.labels.route?.includes(id)), 'no route label holds the id')

  // Every app has its own registry: another app in this process saw none of these requests.
  const other = await testApp({ logLevel: 'silent', rateLimitPerMinute: 1201 })
  t.equal(value(await scrape(t, other), 'http_requests_total', { method: 'POST', route: '/v1/changelog', status: 201 }), undefined)
})

t.test('unknown URLs share one route label: random paths add no series', async (t) => {
  const app = await testApp({ logLevel: 'silent' })
  // A path nobody serves (404), a method a path lacks (405), an operation's path that cannot be
  // decoded (its key is checked first: a 401, under the operation's route).
  const strangers = () => [
    { url: `/${randomBytes(8).toString('hex')}/prj_${randomBytes(10).toString('hex')}?email=ada@example.com` },
    { method: 'PUT' as const, url: `/v1/changelog?${randomBytes(4).toString('hex')}=1` },
    { url: `/v1/changelog/%FF${randomBytes(4).toString('hex')}` },
  ]
  const series = (m: Exposition) =>
    m.samples
      .filter((s) => s.name === 'http_requests_total')
      .map((s) => JSON.stringify(s.labels))
      .sort()
  await scrape(t, app)
  for (const request of strangers()) await call(t, app, request)
  const before = await scrape(t, app)
  t.equal(value(before, 'http_requests_total', { method: 'GET', route: 'unmatched', status: 404 }), 1)
  t.equal(value(before, 'http_requests_total', { method: 'PUT', route: 'unmatched', status: 405 }), 1)
  t.equal(value(before, 'http_requests_total', { method: 'GET', route: '/v1/changelog/:id', status: 401 }), 1, 'an undecodable id, under its route')
  for (let i = 0; i < 5; i++) for (const request of strangers()) await call(t, app, request)
  const after = await scrape(t, app)
  t.same(series(after), series(before), 'no new label value')
  t.equal(value(after, 'http_requests_total', { method: 'GET', route: 'unmatched', status: 404 }), 6)
})

t.test('401s and 429s are counted, 429s by the budget that ran out', async (t) => {
  const app = await testApp({ authFailuresPerMinute: 2, rateLimitPerMinute: 2 })
  const { id, key } = await createProject()

  // Failed authentications from one address: two 401s, then its budget is spent (429).
  const failing = randomAddress()
  t.equal((await call(t, app, { url: '/v1/changelog', remoteAddress: failing })).status, 401)
  t.equal((await call(t, app, { method: 'POST', url: '/admin/v1/projects', body: { name: 'x' }, headers: { authorization: 'Bearer wrong-admin-token-0123456789' }, remoteAddress: failing })).status, 401)
  t.equal((await call(t, app, { url: '/v1/changelog', key: someKey(), remoteAddress: failing })).status, 429)

  // One budget of each other kind, spent.
  const statuses = async (request: Parameters<typeof call>[2], times: number) => {
    const seen: number[] = []
    for (let i = 0; i < times; i++) seen.push((await call(t, app, request)).status)
    return seen
  }
  t.same(await statuses({ url: '/v1/changelog', key, remoteAddress: randomAddress() }, 3), [200, 200, 429], 'api key')
  t.same(await statuses({ url: `/portal/${id}/changelog.json`, remoteAddress: randomAddress() }, 3), [200, 200, 429], 'portal address')
  const signup = { method: 'POST' as const, url: `/portal/${id}/beta/no-such-program`, body: 'email=ada%40example.com', headers: { 'content-type': 'application/x-www-form-urlencoded' }, remoteAddress: randomAddress() }
  t.same(await statuses(signup, 2), [404, 429], 'signup (1 a minute at this budget)')
  t.same(await statuses({ url: '/admin/v1/projects/prj_000000000000000000000', headers: admin }, 3), [404, 404, 429], 'operator')

  const m = await scrape(t, app)
  t.equal(value(m, 'http_auth_failures_total', { credential: 'api_key' }), 2, 'the one answered 429 included')
  t.equal(value(m, 'http_auth_failures_total', { credential: 'admin_token' }), 1)
  for (const category of ['api_key', 'portal_address', 'signup', 'operator', 'auth_failures']) {
    t.equal(value(m, 'http_rate_limited_total', { category }), 1, category)
  }
  t.equal(value(m, 'http_requests_total', { method: 'GET', route: '/v1/changelog', status: 429 }), 2)
  t.equal(value(m, 'http_requests_total', { method: 'GET', route: '/v1/changelog', status: 401 }), 1)
})

t.test('a database that is gone: every 503 unavailable counted, and the metrics still answer', async (t) => {
  const database = await openDatabase({ loadDataDir: await newPgliteDataDir() })
  const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN }, database)
  t.teardown(() => app.close())
  await database.close()
  t.equal((await call(t, app, { url: '/readyz' })).status, 503)
  t.equal((await call(t, app, { url: '/v1/changelog', key: someKey() })).status, 503)
  const m = await scrape(t, app)
  t.equal(value(m, 'db_unavailable_total'), 2)
  t.equal(value(m, 'db_statement_timeouts_total'), 0, 'no statement ran long: the database was gone')
})

t.test('pool gauges are read at scrape time', async (t) => {
  // A database of its own: no other test's app (their background work included) uses its pool.
  const database = await newTestDatabase()
  const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN }, database)
  t.teardown(() => app.close())
  const idle = await scrape(t, app)
  const pglite = database.kind === 'pglite'
  t.equal(value(idle, 'db_pool_connections'), pglite ? 1 : OWN_DATABASE_POOL_SIZE)
  t.ok(value(idle, 'db_pool_slots')! >= (pglite ? 1 : OWN_DATABASE_POOL_SIZE), 'slots: one per connection at least')
  t.equal(value(idle, 'db_pool_slots_in_use'), 0)
  t.equal(value(idle, 'db_pool_waiting'), 0)
  for (const name of ['db_pool_connections', 'db_pool_slots', 'db_pool_slots_in_use', 'db_pool_waiting']) t.equal(idle.types.get(name), 'gauge', name)

  // A transaction holds a slot while it is open; on PGlite a statement beside it waits for it.
  let queued: Promise<unknown> | undefined
  await database.db.transaction(async (tx) => {
    await tx.execute(sql`select 1`)
    // Drizzle runs a query when it is awaited: then() starts it.
    if (pglite) queued = database.db.execute(sql`select 1`).then(() => undefined)
    const busy = await scrape(t, app)
    t.equal(value(busy, 'db_pool_slots_in_use'), 1)
    if (pglite) t.equal(value(busy, 'db_pool_waiting'), 1)
  })
  await queued
  t.equal(value(await scrape(t, app), 'db_pool_slots_in_use'), 0)
})

t.test('process metrics are exported, and no label holds an id, a key, a token, an email or a path', async (t) => {
  const app = await testApp({ logLevel: 'silent' })
  const { id, key } = await createProject()
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Labels', status: 'active', allow_public_signup: true } })
  const programId = program.json.data.id as string
  const tester = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${programId}/testers`, key, body: { email: 'ada@example.com' } })
  await call(t, app, { url: `/v1/beta/programs/${programId}/testers/${tester.json.data.id}`, key })
  await call(t, app, { url: `/beta/join?token=${tester.json.data.token}` })
  await call(t, app, { url: `/portal/${id}/beta/${program.json.data.slug}` })
  await call(t, app, { url: `/admin/v1/projects/${id}`, headers: admin })
  await call(t, app, { url: `/v1/changelog?cursor=${randomBytes(12).toString('base64url')}`, key })

  const res = await call(t, app, { url: '/metrics', headers: admin })
  const m = parse(res.raw)
  for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_version_info']) {
    t.ok(m.samples.some((s) => s.name === name), `${name} (collectDefaultMetrics)`)
  }
  const values = new Set(m.samples.flatMap((s) => Object.values(s.labels)))
  const secretish = [...values].filter((v) => /\b(prj|fbk|bp|bt|ch|fb|key|eu|we|wd|evt)_[A-Za-z0-9]/.test(v) || v.includes('@') || v.includes('?') || v.includes(ADMIN_TOKEN))
  t.same(secretish, [], 'no label value looks like an id, a key, an email, a query or the token')
  t.notMatch(res.raw, key, 'the API key appears nowhere')
  t.notMatch(res.raw, tester.json.data.token, 'the tester token appears nowhere')
  const routes = new Set(m.samples.filter((s) => s.name === 'http_requests_total').map((s) => s.labels.route))
  t.ok(routes.has('/v1/beta/programs/:program_id/testers/:id') && routes.has('/portal/:project_id/beta/:slug'), 'templates, not paths')
})

t.test("a 503 the instance gives because it is busy is counted by its reason, not as the database's", async (t) => {
  const { key } = await createProject()
  const large = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body: { title: 'Large', body: 'x'.repeat(70_000) } })
  // An instance whose body budget is held by someone else, and whose render line takes nothing.
  const budget = bodyBudget(1)
  t.teardown(budget.take(1, 'someone else').release)
  const renderer = new MarkdownRenderer({ maxWaiting: 0 })
  t.teardown(() => renderer.close())
  const app = await testApp({ adminToken: ADMIN_TOKEN }, { bodyBudgets: { api: budget }, markdown: renderer })
  t.equal((await call(t, app, { url: `/v1/changelog/${large.json.data.id}`, key })).status, 503, 'a large answer refused')
  t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Rendered', body: 'a body' } })).status, 503, 'a render refused')
  t.equal((await call(t, app, { url: '/v1/changelog?status=all&limit=1', key, headers: { 'if-none-match': '"x"' } })).status, 503, 'and again')
  t.equal((await call(t, app, { url: '/openapi.json' })).status, 200, "the deployment's own documents, over 64 KiB, are not counted")
  const m = await scrape(t, app)
  t.equal(value(m, 'http_busy_total', { reason: 'large_answers' }), 2)
  t.equal(value(m, 'http_busy_total', { reason: 'renders' }), 1)
  t.equal(value(m, 'db_unavailable_total'), 0, 'the database is not blamed')
})

t.test("every metric of the app's own is documented, in the README's table and in openapi.yaml", async (t) => {
  const app = await testApp({ adminToken: ADMIN_TOKEN })
  const names = [...(await app.metrics.text()).matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!).filter((name) => !/^(process|nodejs)_/.test(name))
  t.ok(names.length > 10, `the app's metrics (${names.length})`)
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  const spec = readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')
  for (const name of names) {
    t.ok(readme.includes(`\`${name}\``), `${name}: in the README`)
    t.ok(spec.includes(`\`${name}\``), `${name}: in openapi.yaml`)
  }
})
