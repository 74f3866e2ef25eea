// Per-key rate limits (contract §7): the IETF draft RateLimit-* headers, a problem+json 429 with
// Retry-After, budgets that never touch another key, and one budget shared through Redis.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { settle } from '../helpers/clock.js'
import { testDatabase } from '../helpers/db.js'
import { hashApiKey } from '../../src/domain/secrets.js'
import { Redis } from 'ioredis'

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

  // Where the budget lives in Redis: the plugin's name for a store made by createRateLimit
  // (RedisStore.child given no route, so "undefinedundefined-"). Budgets are found under it
  // across a deploy; a release of the plugin that names it otherwise (package.json pins it
  // exactly) starts every budget afresh once, and fails here first.
  const redis = new Redis(REDIS_URL, { lazyConnect: true })
  t.teardown(() => redis.disconnect())
  t.equal(await redis.get(`feedback-rl:undefinedundefined-key:${hashApiKey(key)}`), '5', "the key's budget, counted under the name the plugin gives it")
})

/** A TCP proxy to Redis that can stop carrying bytes and start again, as a Redis stopped with SIGSTOP does. */
async function freezableRedis(t: { teardown(fn: () => void): void }) {
  const target = new URL(REDIS_URL)
  let frozen = false
  const held: Socket[] = []
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname)
    held.push(client, upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    for (const socket of [client, upstream]) {
      socket.on('error', () => {}).on('close', () => (client.destroy(), upstream.destroy()))
      if (frozen) socket.pause()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of held) socket.destroy()
    server.close()
  })
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    freeze(value: boolean) {
      frozen = value
      for (const socket of held) if (value) socket.pause()
      else socket.resume()
    },
  }
}

t.test('a Redis that stops answering never holds a request: the budget passes unlimited until it answers again', async (t) => {
  // With no command timeout, a stalled Redis held every request until the client gave up (found
  // by a review that stopped Redis with SIGSTOP); /readyz said 200 meanwhile.
  const redis = await freezableRedis(t)
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean))
      done()
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'info', rateLimitPerMinute: 3, redisUrl: redis.url }, await testDatabase(), { logger: { stream } })
  t.teardown(() => app.close())
  const { key } = await createProject()
  const get = () => call(t, app, { url: '/v1/changelog', key })
  const logged = (message: string) => lines.some((line) => JSON.parse(line).msg === message)

  t.equal((await get()).headers['ratelimit-remaining'], '2', 'counted in Redis')
  redis.freeze(true)
  const silent = await get()
  t.equal(silent.status, 200, 'answered while Redis is silent')
  await settle(() => logged('Redis unreachable; rate limits are not enforced until it is back'))
  for (let i = 0; i < 5; i++) t.equal((await get()).status, 200, 'not limited, not held')
  // No budget is shown that was not counted (they read as a full one: limit 3, remaining 3, reset 0).
  const { id } = await createProject()
  for (const res of [silent, await get(), await call(t, app, { url: `/portal/${id}/changelog.json` })]) {
    t.same(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'].map((header) => res.headers[header]), [undefined, undefined, undefined], 'no RateLimit-* while nothing is counted')
  }
  redis.freeze(false)
  await settle(() => logged('Redis reachable again; rate limits are enforced'))
  // The commands sent while it was silent ran once it answered, so the first key's count is past
  // its budget; a new key shows the budget enforced again.
  const other = await createProject()
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) statuses.push((await call(t, app, { url: '/v1/changelog', key: other.key })).status)
  t.same(statuses, [200, 200, 200, 429], "counted in Redis again: a key's fourth request is over the budget of 3")
})
