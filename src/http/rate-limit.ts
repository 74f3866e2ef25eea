// Per-key rate limits by @fastify/rate-limit: in memory on one instance, in Redis when
// REDIS_URL is set so that several instances share one budget. Operations secured by an API key
// count per key presented (by its SHA-256, never the key itself), after the guard has checked its
// shape and before it looks the key up (see guard.ts: a key-scoped read looks it up in its own
// statement), one budget for all operations together (the plugin's per-route budgets would let a
// key make the limit on every operation). A key past its budget is looked up before the 429, so
// an unknown key is still a 401 and a disabled feature still a 403. The key-less portal (pages and feeds) counts per client address
// with the same budget, so that one client cannot flood it; behind a proxy that hides client
// addresses, all visitors share it. Public signup has a tighter budget of its own, and each
// operator operation a budget of its own. The probes (/healthz, /readyz, /openapi.*, /docs)
// are not counted.
// The IETF draft headers (RateLimit-Limit, -Remaining, -Reset, Retry-After) are the one family sent.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { ApiError } from './errors.js'

/** What the plugin sets on a counted request (Retry-After only beyond the budget). */
export const RATE_LIMIT_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after']

const isPublic = (request: FastifyRequest) => request.routeOptions.config.route?.tag === 'portal'
const isOperator = (request: FastifyRequest) => request.routeOptions.config.route?.security === 'AdminToken'

export async function registerRateLimit(app: FastifyInstance, config: Config): Promise<void> {
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { connectTimeout: 1000, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
    : undefined
  if (redis) {
    // Without an offline queue a command fails at once while Redis is away (and the request
    // passes, see skipOnError) instead of waiting; ioredis reconnects in the background.
    redis.on('error', () => {})
    await redis.connect().catch((error: Error) => app.log.warn({ err: { message: error.message } }, 'Redis unreachable; rate limits are not enforced until it is back'))
    app.addHook('onClose', async () => {
      redis.disconnect()
    })
  }
  await app.register(rateLimit, {
    // Every route counts against one budget per key (or address), unless a route sets its own.
    global: true,
    max: config.rateLimitPerMinute,
    timeWindow: 60_000,
    allowList: (request) => !request.credential && !isPublic(request) && !isOperator(request),
    enableDraftSpec: true,
    // An unreachable Redis must not take the API down: requests pass unlimited meanwhile.
    skipOnError: true,
    nameSpace: 'feedback-rl:',
    ...(redis ? { redis } : {}),
    keyGenerator: (request) => (request.credential ? `key:${request.credential.keyHash}` : isPublic(request) ? `ip:${request.ip}` : 'admin'),
    errorResponseBuilder: (request, context) =>
      new ApiError('rate_limited', `More than ${context.max} requests a minute ${isPublic(request) ? 'from this address' : 'with this key'}; retry in ${context.after}.`),
  })
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
  if (route.operationId === 'submitBetaSignup') return { max: signupsPerMinute(config), timeWindow: 60_000 }
  if (route.security === 'AdminToken') return { max: config.rateLimitPerMinute, timeWindow: 60_000 }
  return undefined
}
