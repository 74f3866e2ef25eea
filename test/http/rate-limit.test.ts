// Per-key rate limits (contract §7): the IETF draft RateLimit-* headers, a problem+json 429 with
// Retry-After, budgets that never touch another key, and one budget shared through Redis.
import t from 'tap'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379'

t.test('over the limit a key gets 429 rate_limited with Retry-After; other keys are untouched', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 3 })
  const a = await createProject()
  const b = await createProject()
  for (let i = 1; i <= 3; i++) {
    const res = await call(t, app, { url: '/v1/changelog', key: a.key })
    t.equal(res.status, 200)
    t.equal(res.headers['ratelimit-limit'], '3')
    t.equal(res.headers['ratelimit-remaining'], String(3 - i))
  }
  const limited = await call(t, app, { url: '/v1/changelog', key: a.key })
  t.equal(limited.status, 429)
  t.equal(limited.json.code, 'rate_limited')
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After in seconds')
  t.equal(limited.headers['ratelimit-remaining'], '0')
  t.equal((await call(t, app, { url: '/v1/changelog', key: b.key })).status, 200, "another project's key has its own budget")
  t.equal((await call(t, app, { url: '/healthz' })).status, 200, 'unauthenticated operations are not limited')
  t.notOk((await call(t, app, { url: '/healthz' })).headers['ratelimit-limit'])
})

t.test('one budget per key covers every operation together', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 4 })
  const { key } = await createProject()
  const urls = ['/v1/changelog', '/v1/beta/programs', '/v1/changelog?limit=1', '/v1/beta/programs?limit=1']
  const remaining: string[] = []
  for (const url of urls) remaining.push(String((await call(t, app, { url, key })).headers['ratelimit-remaining']))
  t.same(remaining, ['3', '2', '1', '0'], 'each operation draws on the same budget')
  const limited = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Over' } })
  t.equal(limited.status, 429, 'a fifth operation, of any kind, is over it')
  t.equal(limited.json.code, 'rate_limited')
  for (const url of ['/healthz', '/readyz', '/openapi.json']) {
    t.equal((await call(t, app, { url })).status, 200, `${url} is not limited`)
  }
})

t.test('a request counts against the key it presents; past the budget, 401 and 403 still come first', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 2 })
  const unknown = `fbk_${'u'.repeat(40)}`
  const noBeta = await createProject({ beta: false })
  const live = await createProject()
  for (let i = 1; i <= 4; i++) {
    const res = await call(t, app, { url: '/v1/changelog', key: unknown })
    t.same([res.status, res.json.code], [401, 'unauthorized'], `unknown key, request ${i}`)
    t.notOk(res.headers['ratelimit-limit'] ?? res.headers['retry-after'], 'a key that does not exist has no budget to report')
    const beta = await call(t, app, { url: '/v1/beta/programs', key: noBeta.key })
    t.same([beta.status, beta.json.code], [403, 'beta_disabled'], `project without beta, request ${i}`)
  }
  t.equal((await call(t, app, { url: '/v1/changelog', key: noBeta.key })).status, 429, "the project without beta spent its key's budget")
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push((await call(t, app, { url: '/v1/changelog', key: live.key })).status)
  t.same(statuses, [200, 200, 429], 'another key keeps its whole budget')
})

t.test('each operator operation has a budget of its own', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 2 })
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}` }
  const created: string[] = []
  for (let i = 0; i < 2; i++) {
    const res = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers, body: { name: `P${i}` } })
    t.equal(res.status, 201)
    created.push(res.json.data.id as string)
  }
  const over = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers, body: { name: 'P2' } })
  t.equal(over.status, 429, 'a third create in the minute is over its budget')
  t.equal(over.json.code, 'rate_limited')
  t.equal((await call(t, app, { url: `/admin/v1/projects/${created[0]}`, headers })).status, 200, 'reads have their own budget')
})

t.test('with REDIS_URL two instances share one budget per key', async (t) => {
  const first = await testApp({ rateLimitPerMinute: 4, redisUrl: REDIS_URL })
  const second = await testApp({ rateLimitPerMinute: 4, redisUrl: REDIS_URL })
  const { key } = await createProject()
  const statuses: number[] = []
  const urls = ['/v1/changelog', '/v1/beta/programs', '/v1/changelog', '/v1/beta/programs', '/v1/changelog']
  for (const [i, app] of [first, second, first, second, first].entries()) statuses.push((await call(t, app, { url: urls[i]!, key })).status)
  t.same(statuses, [200, 200, 200, 200, 429], 'the fifth request is over the shared budget, whichever instance and operation take it')
})
