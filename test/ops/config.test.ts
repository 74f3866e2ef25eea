import t from 'tap'
import Fastify from 'fastify'
import { defaults, loadConfig, SetupError, statementDeadlineFor } from '../../src/config.js'

t.test('defaults apply when nothing is set', async (t) => {
  t.same(loadConfig({}), defaults)
  t.equal(defaults.requestTimeoutMs, 30_000, 'a request arrives in full within 30 s')
  t.equal(defaults.dbPrepare, true, 'statements are prepared unless DB_PREPARE=false')
  t.equal(defaults.webhookDispatch, true, 'every instance delivers webhooks unless WEBHOOK_DISPATCH=false')
})

t.test('values are read and typed', async (t) => {
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    DATABASE_URL: 'postgres://u@db:5432/x',
    DB_POOL_SIZE: '20',
    ADMIN_TOKEN: 'a-long-enough-admin-token',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '60',
    AUTH_FAILURES_PER_MINUTE: '5',
    REDIS_URL: 'redis://cache:6379',
    REQUEST_TIMEOUT_MS: '5000',
    SHUTDOWN_DELAY_MS: '3000',
    DB_PREPARE: 'false',
    WEBHOOK_DISPATCH: 'false',
  })
  t.match(config, { port: 8080, host: '0.0.0.0', databaseUrl: 'postgres://u@db:5432/x', dbPoolSize: 20, dbPrepare: false, webhookDispatch: false, logLevel: 'warn', rateLimitPerMinute: 60, authFailuresPerMinute: 5, redisUrl: 'redis://cache:6379', requestTimeoutMs: 5000, shutdownDelayMs: 3000 })
  t.ok(Object.isFrozen(config))
})

t.test('the statement deadline follows the statement timeout, and must exceed it', async (t) => {
  t.equal(loadConfig({ DB_STATEMENT_TIMEOUT_MS: '2000' }).dbStatementDeadlineMs, 3000, 'by default one second over the timeout')
  t.equal(loadConfig({ DB_STATEMENT_TIMEOUT_MS: '2000', DB_STATEMENT_DEADLINE_MS: '2500' }).dbStatementDeadlineMs, 2500)
  t.throws(() => loadConfig({ DB_STATEMENT_TIMEOUT_MS: '2000', DB_STATEMENT_DEADLINE_MS: '2000' }), /DB_STATEMENT_DEADLINE_MS must be an integer from 2100/)
  // The defaults that tests and buildApp's callers spread keep the same rule (they had it written out).
  t.equal(defaults.dbStatementDeadlineMs, statementDeadlineFor(defaults.dbStatementTimeoutMs))
  t.equal(loadConfig({}).dbStatementDeadlineMs, defaults.dbStatementDeadlineMs)
})

/** What loadConfig throws for `env`, if anything. */
function refusalOf(env: Record<string, string>): Error | undefined {
  try {
    loadConfig(env)
  } catch (error) {
    return error as Error
  }
  return undefined
}

t.test('bad values stop the start with a message naming the variable', async (t) => {
  const bad: Record<string, string> = {
    PORT: 'eighty',
    DB_POOL_SIZE: '0',
    DATABASE_URL: 'mysql://x',
    LOG_LEVEL: 'loud',
    ADMIN_TOKEN: 'short',
    RATE_LIMIT_PER_MINUTE: '1.5',
    AUTH_FAILURES_PER_MINUTE: '0',
    REDIS_URL: 'http://cache',
    REQUEST_TIMEOUT_MS: '0',
    SHUTDOWN_DELAY_MS: '5001',
    DB_PREPARE: 'no',
    DB_STATEMENT_DEADLINE_MS: '1000',
    WEBHOOK_DISPATCH: 'off',
  }
  for (const [name, value] of Object.entries(bad)) t.throws(() => loadConfig({ [name]: value }), new RegExp(name), `${name}=${value}`)
  // Found by an operations review: numbers Number() reads, and a URL the parser refused with a
  // stack that printed it, password included.
  for (const value of ['1e3', '0x1F4', ' 80', '80 ']) t.throws(() => loadConfig({ PORT: value }), /PORT must be an integer/, `PORT=${JSON.stringify(value)}`)
  t.equal(loadConfig({ PORT: '00000000000000080' }).port, 80, 'leading zeros are digits too')
  for (const url of ['postgres://app:s3cret/pw@db:5432/app', 'postgres://app:s3cret#x@db/app', 'postgres://db:99999/app', 'postgres://a:b@[bad/x', 'postgres://app:s3cret@db1:5432,db2:5432/app']) {
    const refusal = refusalOf({ DATABASE_URL: url })
    t.ok(refusal instanceof SetupError, `${url.replace('s3cret', '…')}: one line (a SetupError)`)
    t.match(refusal?.message, /^DATABASE_URL is not a valid URL/)
    t.notMatch(refusal?.message, /s3cret|app:/, 'without the URL, which holds the password')
  }
  // Forms the URL parser takes and libpq does not (found by a review: an escape that does not
  // decode stopped the start with a stack), or one socket cannot be.
  for (const [url, why] of [
    ['postgres://app:s3cret@127.0.0.1%zz:5432/app', /a host holds an escape that does not decode/],
    ['postgres://app:s3cret@x/app?host=a,b,c&port=1,2', /3 hosts and 2 ports/],
    ['postgres://app:s3cret@x/app?host=/tmp,/var/run/postgresql', /among several hosts/],
    ['postgres://app:s3cret@x/app?sslmode=disabled', /sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full, not "disabled"/],
  ] as const) {
    const refusal = refusalOf({ DATABASE_URL: url })
    t.ok(refusal instanceof SetupError, `${url.replace('s3cret', '…')}: one line (a SetupError)`)
    t.match(refusal?.message, why)
    t.notMatch(refusal?.message, /s3cret/, 'without the password')
  }
})

t.test('PUBLIC_BASE_URL is an http(s) origin, kept without its trailing slash', async (t) => {
  t.equal(loadConfig({}).publicBaseUrl, undefined, 'unset: links stay relative')
  t.equal(loadConfig({ PUBLIC_BASE_URL: '' }).publicBaseUrl, undefined, 'empty is unset')
  const read: Record<string, string> = {
    'https://feedback.example.com': 'https://feedback.example.com',
    'https://feedback.example.com/': 'https://feedback.example.com',
    'HTTPS://Feedback.Example.COM/': 'https://feedback.example.com',
    'http://127.0.0.1:3000': 'http://127.0.0.1:3000',
    'https://feedback.example.com:443/': 'https://feedback.example.com',
    'https://bücher.example': 'https://xn--bcher-kva.example',
  }
  for (const [raw, origin] of Object.entries(read)) t.equal(loadConfig({ PUBLIC_BASE_URL: raw }).publicBaseUrl, origin, raw)
  const refused = [
    'feedback.example.com',
    '/portal',
    'ftp://feedback.example.com',
    'javascript:alert(1)',
    'https://user:pass@feedback.example.com',
    'https://feedback.example.com@evil.example',
    'https://feedback.example.com/feedback',
    'https://feedback.example.com/?x=1',
    'https://feedback.example.com/?',
    'https://feedback.example.com/#top',
    'https://',
  ]
  for (const raw of refused) t.throws(() => loadConfig({ PUBLIC_BASE_URL: raw }), /PUBLIC_BASE_URL must be the origin/, raw)
})

t.test('TRUST_PROXY lists proxies by address, CIDR range or name; nothing else', async (t) => {
  t.same(loadConfig({}).trustProxy, [], 'unset: X-Forwarded-For is ignored')
  t.same(loadConfig({ TRUST_PROXY: ' 10.0.0.0/8, 127.0.0.1 ,::1,fd00::/8,loopback,uniquelocal' }).trustProxy, [
    '10.0.0.0/8',
    '127.0.0.1',
    '::1',
    'fd00::/8',
    'loopback',
    'uniquelocal',
  ])
  const refused = ['true', '1', '*', '10.0.0.0/33', 'fd00::/129', '10.0.0.1/8/8', 'proxy.internal', '10.0.0.0/', '10.0.0.0/8,,127.0.0.1']
  // Every address, or a zone, which Fastify's proxy-addr would refuse with a stack trace once the database is open.
  for (const bad of [...refused, '0.0.0.0/0', '10.0.0.0/0', '::/0', 'fe80::1%eth0', 'fe80::1%a:b']) {
    t.throws(() => loadConfig({ TRUST_PROXY: bad }), { name: 'Error', message: /^TRUST_PROXY must list the addresses or CIDR ranges \(\/1 or longer\) of the proxies/ }, bad)
  }
  const accepted = loadConfig({ TRUST_PROXY: '10.0.0.0/1,192.0.2.1/32,2001:db8::/128,::ffff:192.0.2.1,127.0.0.1,::1,fd00::/8,loopback,linklocal,uniquelocal' })
  t.doesNotThrow(() => Fastify({ trustProxy: [...accepted.trustProxy] }), 'Fastify takes every form the setting accepts')
})
