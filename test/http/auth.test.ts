// Authentication and the gates, in the contract's order: 401, then 403 (beta before plan),
// then 400, then 404.
import t from 'tap'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { overHttp } from '../helpers/over-http.js'

t.test('a missing, malformed, unknown or wrongly presented key is 401 with WWW-Authenticate', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const cases: Record<string, Record<string, string>> = {
    missing: {},
    'no scheme': { authorization: key },
    'basic scheme': { authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` },
    'bad shape': { authorization: 'Bearer fbk_short' },
    unknown: { authorization: `Bearer fbk_${'A'.repeat(40)}` },
    'key with trailing garbage': { authorization: `Bearer ${key}x` },
    'two tokens': { authorization: `Bearer ${key} ${key}` },
  }
  for (const [name, headers] of Object.entries(cases)) {
    const res = await call(t, app, { url: '/v1/changelog', headers })
    t.equal(res.status, 401, name)
    t.equal(res.json.code, 'unauthorized', name)
    t.equal(res.headers['www-authenticate'], 'Bearer', name)
    t.notOk(res.raw.includes(key), `${name}: the key is not echoed`)
  }
  const lower = await call(t, app, { url: '/v1/beta/programs', headers: { authorization: `bearer ${key}` } })
  t.equal(lower.status, 200, 'the scheme is case-insensitive')
})

t.test('an Authorization header sent twice is 401, whichever copy holds a live key', async (t) => {
  // Node keeps the first copy; a proxy in front may authenticate by the last. An app of its own
  // (any configuration given makes one), since this one listens.
  const send = await overHttp(await testApp({ adminToken: ADMIN_TOKEN }))
  const { key } = await createProject()
  const other = `Bearer fbk_${'B'.repeat(40)}`
  for (const [name, copies] of [
    ['the live key first', [`Bearer ${key}`, other]],
    ['the live key last', [other, `Bearer ${key}`]],
    ['the live key twice', [`Bearer ${key}`, `Bearer ${key}`]],
  ] as const) {
    const answer = await send({ path: '/v1/beta/programs', headers: { authorization: [...copies] } })
    t.same([answer.status, answer.headers['www-authenticate']], [401, 'Bearer'], name)
    t.equal(JSON.parse(answer.body).detail, 'The Authorization header was sent more than once; send it once.', name)
  }
  t.equal((await send({ path: '/v1/beta/programs', headers: { authorization: `Bearer ${key}` } })).status, 200, 'once, the same key is served')
  t.equal((await send({ path: '/admin/v1/projects', headers: { authorization: [`Bearer ${ADMIN_TOKEN}`, `Bearer ${ADMIN_TOKEN}`] } })).status, 401, 'the operator token likewise')
})

t.test('401 comes before 403, 400 and 404', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { method: 'PATCH', url: '/v1/beta/programs/nope', body: { name: '' } })
  t.equal(res.status, 401)
})

t.test('beta_disabled applies to reads and writes, and comes before plan_required', async (t) => {
  const app = await testApp()
  const free = await createProject({ plan: 'free', beta: false })
  for (const [method, url] of [
    ['GET', '/v1/beta/programs'],
    ['GET', '/v1/beta/programs/bp_000000000000000000000'],
    ['POST', '/v1/beta/programs'],
    ['DELETE', '/v1/beta/programs/bp_000000000000000000000/testers/bt_000000000000000000000'],
  ] as const) {
    const res = await call(t, app, { method, url, key: free.key, ...(method === 'POST' ? { body: { name: '' } } : {}) })
    t.equal(res.status, 403, `${method} ${url}`)
    t.equal(res.json.code, 'beta_disabled', `${method} ${url}`)
  }
})

t.test('plan_required for writes on the free plan, before validation and lookup', async (t) => {
  const app = await testApp()
  const free = await createProject({ plan: 'free', beta: true })
  for (const [method, url, body] of [
    ['POST', '/v1/changelog', { title: '' }],
    ['PATCH', '/v1/changelog/ch_000000000000000000000', { nope: 1 }],
    ['DELETE', '/v1/changelog/ch_000000000000000000000', undefined],
    ['POST', '/v1/beta/programs', { name: 'ok' }],
  ] as const) {
    const res = await call(t, app, { method, url, key: free.key, body })
    t.equal(res.status, 403, `${method} ${url}`)
    t.equal(res.json.code, 'plan_required', `${method} ${url}`)
  }
  const read = await call(t, app, { url: '/v1/beta/programs', key: free.key })
  t.equal(read.status, 200, 'reads work on the free plan')
})

t.test('400 comes before 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { method: 'PATCH', url: '/v1/beta/programs/bp_000000000000000000000', key, body: { name: '' } })
  t.equal(res.status, 400)
  const unknownQuery = await call(t, app, { url: '/v1/changelog/ch_000000000000000000000?x=1', key })
  t.equal(unknownQuery.status, 400)
})
