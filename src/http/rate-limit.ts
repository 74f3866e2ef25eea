// Rate limits by @fastify/rate-limit: in memory on one instance, in Redis when REDIS_URL is set
// so that several instances share one budget.
//
// - API keys: one budget per key (by its SHA-256, never the key itself) for all /v1 operations
//   together (the plugin's per-route budgets would let a key make the limit on every operation).
//   Only a key found live gets a counter: the guard counts a request after the key's lookup
//   (guard.ts), so random keys never take room from real ones. A key past its budget is still
//   looked up before the 429: an unknown, revoked or expired key is a 401, a disabled feature a 403.
// - Failed authentications: every would-be 401 (a missing, malformed, unknown, revoked or expired key, a
//   wrong admin token) counts against the client address; past AUTH_FAILURES_PER_MINUTE the
//   address's would-be 401s are 429 until its window ends, while its requests with a live key
//   go on as usual. Each still costs the one key lookup that tells the two apart.
// - The key-less portal (pages and feeds) counts per client address with the per-key budget,
//   so that one client cannot flood it; public signup has a tighter budget of its own, and each
//   operator operation a budget of its own. The probes (/healthz, /readyz, /openapi.*, /docs)
//   are not counted.
//
// Client addresses count by IPv6 /64 (one subscriber's allocation; IPv4 as is), or one host
// could take a budget per address. The address is request.ip: X-Forwarded-For's client from a
// proxy TRUST_PROXY names (config.ts), else the peer's; behind a proxy not named, all clients
// share one address's budgets. In memory each category has a store of its own, bounded
// (rate-limit-store.ts); in Redis each counter expires with its window, so memory is bounded
// by the window.
//
// The IETF draft headers (RateLimit-Limit, -Remaining, -Reset, Retry-After) are the one family
// sent, for a key's budget, the portal's and the operator's. A 401 carries none (a key that does
// not exist has no budget), and a 429 for failed authentications only Retry-After.
import { isIP } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import rateLimit, { normalizeIP } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { ApiError } from './errors.js'
import type { RateLimitCategory } from './metrics.js'
import { boundedStore } from './rate-limit-store.js'

/** What a counted response may carry (Retry-After only beyond the budget). */
export const RATE_LIMIT_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after']

/** Counters each in-memory store may hold (about 250 bytes each: 12 MB when full); see rate-limit-store.ts. */
const STORE_CAPACITY = 50_000
const WINDOW_MS = 60_000

const isPublic = (request: FastifyRequest) => request.routeOptions.config.route?.tag === 'portal'
export const isOperator = (request: FastifyRequest) => request.routeOptions.config.route?.security === 'AdminToken'
/** `203.0.113.7:4000` and `[2001:db8::1]:443`, as some proxies write a client in X-Forwarded-For. */
const WITH_PORT = /^\[?([^\]]*?)\]?:\d{1,5}$/

/**
 * The address a request counts against. request.ip is the peer's, or what a trusted proxy's
 * X-Forwarded-For names (TRUST_PROXY), which proxy-addr does not check: an address with a port
 * counts as the address, and anything else that is no address as the peer (the proxy), so that
 * neither a port nor made-up text gets a budget of its own.
 */
export function clientAddress(request: Pick<FastifyRequest, 'ip' | 'socket'>): string {
  const ip = request.ip
  if (isIP(ip)) return normalizeIP(ip)
  const withoutPort = WITH_PORT.exec(ip)?.[1]
  return normalizeIP(withoutPort !== undefined && isIP(withoutPort) ? withoutPort : (request.socket.remoteAddress ?? ''))
}
/** `n` of a noun, in the singular for one: "1 second", "10 signups". */
const counted = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`
const seconds = (n: number) => counted(n, 'second')
/** The 429 past a budget the guard counts, with Retry-After. */
const tooMany = (budget: { max: number; ttlInSeconds: number }, what: string) =>
  new ApiError('rate_limited', `More than ${budget.max} ${what}; retry in ${seconds(budget.ttlInSeconds)}.`, { headers: { 'retry-after': String(budget.ttlInSeconds) } })

export interface RateLimits {
  /** Whether the request's key has a counter in this window, so was found live in it (no database work). */
  keyCounted(request: FastifyRequest): Promise<boolean>
  /** Counts a live key's request and sets its RateLimit-* headers; returns the 429 to answer past the budget. */
  countKey(request: FastifyRequest, reply: FastifyReply): Promise<ApiError | undefined>
  /** Counts a would-be 401 against the client address; returns the 429 to answer instead past the budget. */
  countAuthFailure(request: FastifyRequest): Promise<ApiError | undefined>
}

/**
 * How long a Redis command may take before the request passes without it: a Redis that stopped
 * answering (stalled, or cut off by the network without a reset) must not hold the API. Far
 * beyond a healthy Redis's answer, and beyond the event loop's own stalls: ioredis checks its
 * timer before it reads the answer, so a loop busy for longer times out a Redis that answered.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1000
/** How often the connection to Redis is tried with a PING, to tell when it stops answering and when it is back. */
export const REDIS_PROBE_MS = 1000

/**
 * Availability first: while Redis is away, requests pass unlimited (skipOnError) at once. Away
 * means refused (ioredis reconnects in the background; without an offline queue a command fails
 * at once meanwhile) or not answering: a command then fails after REDIS_COMMAND_TIMEOUT_MS, and
 * once a PING has too, the connection is dropped and made again, so that no request waits on it
 * while it stays silent. Each change is one log line.
 */
async function watchRedis(redis: Redis, log: FastifyInstance['log']): Promise<{ close(): void }> {
  let away = false
  const gone = (reason: string) => {
    if (!away) log.warn({ reason }, 'Redis unreachable; rate limits are not enforced until it is back')
    away = true
  }
  redis.on('error', (error: Error) => gone(error.message))
  const probe = async () => {
    try {
      await redis.ping()
      if (away) log.info('Redis reachable again; rate limits are enforced')
      away = false
    } catch (error) {
      gone((error as Error).message)
      if (redis.status === 'ready') redis.disconnect(true)
    }
  }
  const timer = setInterval(() => void probe(), REDIS_PROBE_MS).unref()
  // The first connection, so that the first requests are counted; a start waits for it at most a
  // probe's interval (a Redis that accepts connections and never answers would hold it for ever).
  const connected = redis.connect().then(probe, (error: Error) => gone(error.message))
  await Promise.race([connected, sleep(REDIS_PROBE_MS, undefined, { ref: false })])
  return {
    close() {
      clearInterval(timer)
      redis.disconnect()
    },
  }
}

export async function registerRateLimit(app: FastifyInstance, config: Config, now?: () => number): Promise<RateLimits> {
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { connectTimeout: 1000, commandTimeout: REDIS_COMMAND_TIMEOUT_MS, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
    : undefined
  if (redis) {
    const watch = await watchRedis(redis, app.log)
    app.addHook('onClose', async () => watch.close())
  }
  await app.register(rateLimit, {
    // Every portal route counts against one budget per address, unless a route sets its own;
    // API keys and failed authentications are counted by the guard, below.
    global: true,
    max: config.rateLimitPerMinute,
    timeWindow: WINDOW_MS,
    allowList: (request) => !isPublic(request) && !isOperator(request),
    enableDraftSpec: true,
    // An unreachable Redis must not take the API down: requests pass unlimited meanwhile.
    skipOnError: true,
    nameSpace: 'feedback-rl:',
    ...(redis ? { redis } : { store: boundedStore(STORE_CAPACITY, now) }),
    keyGenerator: (request) => (isPublic(request) ? `ip:${clientAddress(request)}` : 'admin'),
    errorResponseBuilder: (request, context) => {
      const what = counted(context.max, rateLimitCategory(request) === 'signup' ? 'signup' : 'request')
      return new ApiError('rate_limited', `More than ${what} a minute ${isPublic(request) ? 'from this address' : 'with the admin token'}; retry in ${context.after}.`)
    },
  })

  // A budget that counted nothing (its store unreachable, passed by skipOnError) is not shown:
  // the plugin and countKey would show it full (remaining = limit, reset 0), and openapi.yaml's
  // RateLimit-Limit says the three are left out then (found by a review). A count leaves fewer
  // than the limit remaining, so a full budget is one that was not counted.
  app.addHook('onSend', (request, reply, payload, done) => {
    const limit = reply.getHeader('ratelimit-limit')
    if (limit !== undefined && String(reply.getHeader('ratelimit-remaining')) === String(limit)) {
      for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) reply.removeHeader(header)
    }
    done(null, payload)
  })

  // Each a store of its own (in Redis, keys of their own), so neither can crowd the other. In
  // Redis their keys read feedback-rl:undefinedundefined-…: the plugin names a store made this
  // way after a route it does not have (RedisStore.prototype.child, given createLimiterArgs's
  // empty routeInfo; no upstream issue: the name is only ugly). package.json pins the plugin
  // exactly: another naming would start every budget in Redis afresh, once, on the upgrade, and
  // test/http/rate-limit.test.ts reads the budget under this name, so it fails first.
  const keyLimit = app.createRateLimit({ max: config.rateLimitPerMinute, timeWindow: WINDOW_MS, allowList: [], keyGenerator: (request) => `key:${request.credential!.keyHash}` })
  const failureLimit = app.createRateLimit({ max: config.authFailuresPerMinute, timeWindow: WINDOW_MS, allowList: [], keyGenerator: (request) => `auth-failures:${clientAddress(request)}` })

  return {
    async keyCounted(request) {
      const peek = await keyLimit(request, { increment: false })
      return !peek.isAllowed && peek.remaining < peek.max
    },

    async countKey(request, reply) {
      const budget = await keyLimit(request)
      if (budget.isAllowed) return undefined
      reply.header('ratelimit-limit', budget.max)
      reply.header('ratelimit-remaining', budget.remaining)
      reply.header('ratelimit-reset', budget.ttlInSeconds)
      return budget.isExceeded ? tooMany(budget, 'requests a minute with this key') : undefined
    },

    async countAuthFailure(request) {
      const budget = await failureLimit(request)
      if (budget.isAllowed || !budget.isExceeded) return undefined
      return tooMany(budget, 'failed authentications a minute from this address')
    },
  }
}

/**
 * The budget a 429 for this request came from, but the failed-authentication budget, which the
 * error handler knows apart: the routes each budget covers, as registered above and in ownRateLimit.
 */
export function rateLimitCategory(request: FastifyRequest): Exclude<RateLimitCategory, 'auth_failures'> {
  if (isOperator(request)) return 'operator'
  if (!isPublic(request)) return 'api_key'
  return request.routeOptions.config.route?.operationId === 'submitBetaSignup' ? 'signup' : 'portal_address'
}

/**
 * Public signups per client address a minute: each one writes a tester, so a 120th of the
 * per-key budget (10 at the default 1200).
 */
export const signupsPerMinute = (config: Config) => Math.max(1, Math.floor(config.rateLimitPerMinute / 120))

/**
 * A route's own budget where it has one, else the shared one (undefined): public signup has a
 * tighter one, and each operator operation a full one of its own (the operator API is not an
 * API key's traffic; provisioning must not be slowed by reads or revocations).
 */
export function ownRateLimit(config: Config, route: { operationId: string; security: string }) {
  if (route.operationId === 'submitBetaSignup') return { max: signupsPerMinute(config), timeWindow: WINDOW_MS }
  if (route.security === 'AdminToken') return { max: config.rateLimitPerMinute, timeWindow: WINDOW_MS }
  return undefined
}
