// Abuse resistance (contract §11): failed authentication has a budget per client address, an
// unknown key costs one indexed lookup, and no flood of random keys or addresses can evict or
// reset another client's budget. Each test runs in memory and with Redis; each picks client
// addresses and keys of its own, so runs sharing one Redis do not meet.
import { randomBytes, randomInt } from 'node:crypto'
import { Redis } from 'ioredis'
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { hashApiKey } from '../../src/domain/secrets.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { statementsRun, testDatabase } from '../helpers/db.js'

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
const BACKENDS = [
  { name: 'in memory', redisUrl: undefined },
  { name: 'with Redis', redisUrl: REDIS_URL },
]

const randomAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`
const randomKey = () => `fbk_${randomBytes(30).toString('base64url')}`
const budgetHeaders = (headers: Record<string, unknown>) => Object.keys(headers).filter((name) => name.startsWith('ratelimit-'))

/** A project made through the operator API, so that its key can be revoked. */
/**
 * A key of a project of its own, and its revocation, made in the database: the operator API
 * would count against the admin token's budget, which every run sharing one Redis shares (a run
 * repeated within the minute met the last one's count).
 */
async function revocableKey() {
  const repos = makeRepos((await testDatabase()).db)
  const { project } = await repos.projects.create({ name: 'Revocable', plan: 'pro', beta_enabled: false })
  const { key, apiKey } = (await repos.projects.createKey(project.id))!
  return {
    key: apiKey,
    revoke: () => repos.projects.revokeKey(project.id, key.id),
  }
}

for (const backend of BACKENDS) {
  t.test(`${backend.name}: past its failure budget an address's would-be 401s are 429; its live keys keep working`, async (t) => {
    const app = await testApp({ authFailuresPerMinute: 5, rateLimitPerMinute: 100, redisUrl: backend.redisUrl })
    const live = await createProject()
    const revocable = await revocableKey()
    t.ok(await revocable.revoke())
    const from = randomAddress()
    const failures: [string, { method?: 'GET' | 'POST'; url: string; headers?: Record<string, string> }][] = [
      ['missing key', { url: '/v1/changelog' }],
      ['malformed key', { url: '/v1/beta/programs', headers: { authorization: 'Bearer fbk_short' } }],
      ['unknown key', { url: '/v1/changelog/ch_000000000000000000000', headers: { authorization: `Bearer ${randomKey()}` } }],
      ['revoked key', { method: 'POST', url: '/v1/changelog', headers: { authorization: `Bearer ${revocable.key}` } }],
      ['wrong admin token', { url: '/admin/v1/projects/prj_000000000000000000000', headers: { authorization: 'Bearer not-the-admin-token-at-all' } }],
    ]
    for (const [name, request] of failures) {
      const res = await call(t, app, { ...request, remoteAddress: from })
      t.same([res.status, res.json.code], [401, 'unauthorized'], `${name}: within the budget, 401`)
    }
    for (const [name, request] of failures) {
      const res = await call(t, app, { ...request, remoteAddress: from })
      t.same([res.status, res.json.code], [429, 'rate_limited'], `${name}: past the budget, 429`)
      t.match(res.json.detail, /^More than 5 failed authentications a minute from this address; retry in \d+ seconds?\.$/)
      const retryAfter = Number(res.headers['retry-after'])
      t.ok(retryAfter > 0 && retryAfter <= 60, `${name}: Retry-After ${res.headers['retry-after']}`)
      t.same(budgetHeaders(res.headers), [], `${name}: no RateLimit-* headers (no key budget to report)`)
      t.notOk(res.headers['www-authenticate'])
    }

    const ok = await call(t, app, { url: '/v1/changelog', key: live.key, remoteAddress: from })
    t.equal(ok.status, 200, 'a live key from the same address is served')
    t.same([ok.headers['ratelimit-limit'], ok.headers['ratelimit-remaining']], ['100', '99'], "with its own key's budget in the usual headers")
    const write = await call(t, app, { method: 'POST', url: '/v1/changelog', key: live.key, body: { title: 'Still here' }, remoteAddress: from })
    t.equal(write.status, 201)
    t.equal(write.headers['ratelimit-remaining'], '98')
    const elsewhere = await call(t, app, { url: '/v1/changelog', remoteAddress: randomAddress() })
    t.equal(elsewhere.status, 401, 'another address has a budget of its own')
  })

  t.test(`${backend.name}: a dead key past its key budget is 401, and 429 only past the address's failure budget`, async (t) => {
    const app = await testApp({ authFailuresPerMinute: 2, rateLimitPerMinute: 2, redisUrl: backend.redisUrl })
    const revocable = await revocableKey()
    const from = randomAddress()
    for (let i = 0; i < 3; i++) await call(t, app, { url: '/v1/changelog', key: revocable.key, remoteAddress: from })
    t.ok(await revocable.revoke())
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await call(t, app, { url: '/v1/changelog', key: revocable.key, remoteAddress: from })).status)
    t.same(statuses, [401, 401, 429], 'the spent key is refused 401 first, then its address is limited')
  })

  t.test(`${backend.name}: IPv6 addresses count by /64`, async (t) => {
    const app = await testApp({ authFailuresPerMinute: 2, redisUrl: backend.redisUrl })
    const prefix = `2001:db8:${randomInt(65536).toString(16)}:${randomInt(65536).toString(16)}`
    const statuses: number[] = []
    for (let i = 1; i <= 3; i++) statuses.push((await call(t, app, { url: '/v1/changelog', remoteAddress: `${prefix}::${i}` })).status)
    t.same(statuses, [401, 401, 429])
  })

  t.test(`${backend.name}: an unknown key costs one statement, on every kind of operation`, async (t) => {
    const app = await testApp({ redisUrl: backend.redisUrl })
    const statements = statementsRun(t)
    const cases: [string, { method?: 'GET' | 'POST' | 'PATCH'; url: string; body?: unknown }][] = [
      ['a list (key-scoped read)', { url: '/v1/changelog' }],
      ['a read by id', { url: '/v1/changelog/ch_000000000000000000000' }],
      ['a nested list', { url: '/v1/beta/programs/bp_000000000000000000000/testers?limit=1' }],
      ['a read refused 400', { url: '/v1/changelog?limit=0' }],
      ['a write', { method: 'POST', url: '/v1/changelog', body: { title: 'Never' } }],
      ['a write refused 404', { method: 'PATCH', url: '/v1/beta/programs/nope', body: { name: 'x' } }],
    ]
    for (const [name, request] of cases) {
      statements.clear()
      const res = await call(t, app, { ...request, key: randomKey(), remoteAddress: randomAddress() })
      t.equal(res.status, 401, name)
      t.equal(statements.list().length, 1, `${name}: one statement (${statements.list().length} ran)`)
    }
    // A page with rows proves the key by itself (an empty one is followed by a lookup).
    const { id, key } = await createProject()
    await makeRepos((await testDatabase()).db).changelog.create(id, { title: 'Out', body: '', body_html: '', labels: [], version: '1.0.0', locale: 'en', published_at: new Date(Date.now() - 1000) })
    const reads: number[] = []
    for (let i = 0; i < 3; i++) {
      statements.clear()
      t.equal((await call(t, app, { url: '/v1/changelog', key })).status, 200)
      reads.push(statements.list().length)
    }
    t.same(reads, [2, 1, 1], 'a live key is looked up ahead of its first read of the window only')
  })
}

t.test('in memory: the address is answered 401 again once its window ends', async (t) => {
  const clock = { at: Date.now() }
  const app = await testApp({ authFailuresPerMinute: 1 }, { now: () => clock.at })
  const statuses: (number | string)[] = []
  const once = async () => {
    const res = await call(t, app, { url: '/v1/changelog' })
    statuses.push(res.status === 429 ? `429 after ${res.headers['retry-after']}` : res.status)
  }
  await once()
  await once()
  clock.at += 59_000
  await once()
  clock.at += 1_000
  await once()
  t.same(statuses, [401, '429 after 60', '429 after 1', 401])
})

t.test('in memory: a flood of random keys neither evicts nor resets a spent key budget', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 2 })
  const spent = await createProject()
  for (let i = 0; i < 3; i++) await call(t, app, { url: '/v1/changelog', key: spent.key })
  // The plugin's own store held 5,000 counters in an LRU: this many random keys pushed the spent
  // key's counter out, and it came back with a fresh budget.
  for (let i = 0; i < 5_001; i++) {
    const res = await app.inject({ url: '/v1/changelog', headers: { authorization: `Bearer ${randomKey()}` }, remoteAddress: randomAddress() })
    if (res.statusCode !== 401) t.fail(`a random key answered ${res.statusCode}`)
  }
  t.equal((await call(t, app, { url: '/v1/changelog', key: spent.key })).status, 429, 'the spent key is still over its budget')
  const fresh = await createProject()
  const res = await call(t, app, { url: '/v1/changelog', key: fresh.key })
  t.same([res.status, res.headers['ratelimit-remaining']], [200, '1'], 'a new key gets a budget of its own')
})

t.test('in memory: a flood of addresses neither evicts nor resets a spent portal budget', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 2 })
  const { id } = await createProject()
  const url = `/portal/${id}/changelog.json`
  const from = randomAddress()
  for (let i = 0; i < 2; i++) t.equal((await call(t, app, { url, remoteAddress: from })).status, 200)
  for (let i = 0; i < 5_001; i++) {
    const res = await app.inject({ url: '/portal/prj_000000000000000000000/changelog.json', remoteAddress: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}` })
    if (res.statusCode !== 404) t.fail(`an address answered ${res.statusCode}`)
  }
  t.equal((await call(t, app, { url, remoteAddress: from })).status, 429, 'the address is still over its budget')
})

t.test('with Redis: an unknown key never gets a counter', async (t) => {
  const app = await testApp({ redisUrl: REDIS_URL })
  const redis = new Redis(REDIS_URL)
  t.teardown(() => redis.disconnect())
  const unknown = randomKey()
  for (const request of [{ url: '/v1/changelog' }, { method: 'POST' as const, url: '/v1/changelog', body: { title: 'Never' } }]) {
    t.equal((await call(t, app, { ...request, key: unknown, remoteAddress: randomAddress() })).status, 401)
  }
  t.same(await redis.keys(`*${hashApiKey(unknown)}*`), [], 'no Redis key names it')
  const { key } = await createProject()
  t.equal((await call(t, app, { url: '/v1/changelog', key })).status, 200)
  t.equal((await redis.keys(`*${hashApiKey(key)}*`)).length, 1, 'a live key has its counter')
})
