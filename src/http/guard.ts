// Authentication, the beta feature and the plan are checked here for every route, from the
// route's tag, security and method, before the body is even read, so the contract's precedence
// holds: 401, then 403 (beta before plan), then 429, then 400. Nothing about a key is cached:
// operator changes (revocation, expiry, plan, beta feature) apply to the very next request, on every
// instance.
//
// It takes two steps. `identify` (onRequest) refuses a missing or malformed key and hashes it.
// `authorize` (preParsing) looks the key up, counts the request against the key's budget
// (rate-limit.ts: only a live key gets one) and applies the gates; the handler reads by the
// project found (`principal`). That is every operation's default.
//
// A read that proves its own key opts out of the lookup with readByKey() (below): its handler
// reads by the key itself (`project`, a KeyScope: db/repos/scope.ts puts the live key's project
// into the statement), so one statement authenticates and reads. Rows found prove the key live
// and, under /v1/beta, the beta feature on (reads need no plan). Such a read is counted before
// it runs, so its key must already have a counter in this window, which only a live key gets; a
// key without one is looked up first. Any other answer given before the key was looked up (a
// page without rows, a 404, a 400, a 429) proves nothing, so `settle` looks the key up first: a
// dead key is still a 401 and a project without beta still a 403, ahead of everything else
// (routes.ts settles a page without rows, the error handler every refusal). A key is looked up
// at most once a request, so an unknown key costs one indexed lookup.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ApiKeyReadId, RouteSpec } from '../../generated/routes.js'
import type { KeyScope } from '../db/repos/scope.js'
import { hashApiKey, isApiKeyShape, secretsEqual } from '../domain/secrets.js'
import { ApiError, toApiError } from './errors.js'
import { JsonText } from './json-text.js'
import { isOperator, RATE_LIMIT_HEADERS, rateLimitCategory, type RateLimits } from './rate-limit.js'
import { timesSent } from './raw-headers.js'
import type { AppContext, Handler, KeyScopedHandler, KeyScopedRequest, Principal } from './types.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The presented API key, hashed (what rate limits count and reads by key read by),
     * whether it was looked up and found live, and whether the request was counted against its budget.
     */
    credential?: { keyHash: string; lookedUp: boolean; live: boolean; counted: boolean }
    principal?: Principal
    /** On reads by key, the scope the handler reads by. */
    project?: KeyScope
  }
  interface FastifyContextConfig {
    route?: RouteSpec
    /** Set when the route's handler reads by key (readByKey): the guard does not look the key up first. */
    readsByKey?: boolean
  }
}

const READS_BY_KEY = Symbol('reads by key')

/**
 * Opts a GET secured by an API key out of the guard's lookup: the handler gets `project` (the
 * key's scope) instead of `principal`, and passes it to repository reads that take a
 * ProjectScope, which find rows only for a live key (db/repos/scope.ts).
 *
 * Only for a read whose every answer proves the key (provesKey): a record its statement found
 * by the key, or a page of such rows, empty exactly when the statement found none. Never for a
 * count, a sum or any answer computed without rows: it would answer a revoked key 200 with
 * zeros. Those keep the default.
 */
export function readByKey<K extends ApiKeyReadId>(read: KeyScopedHandler<K>): Handler<K> {
  const handler: Handler<K> = (request, ctx) => read(request as unknown as KeyScopedRequest<K>, ctx)
  return Object.assign(handler, { [READS_BY_KEY]: true })
}

export const readsByKey = (handler: unknown): boolean => typeof handler === 'function' && READS_BY_KEY in handler

/**
 * Whether a read by key's answer proves its key: anything but a page without rows. A record was
 * found by the key (a missing one is a 404 thrown, which the error handler settles); a page
 * without rows is settled by routes.ts before it is sent.
 */
export function provesKey(body: unknown): boolean {
  if (body instanceof JsonText) return body.rows > 0
  const data = (body as { data?: unknown } | undefined)?.data
  return !Array.isArray(data) || data.length > 0
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const unauthorized = (detail: string) => new ApiError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer' } })

/**
 * The token of the request's `Authorization: Bearer` header; a 401 when the header was sent more
 * than once: Node keeps the first, a proxy in front may read the last, and the two must never
 * disagree on whose request this is.
 */
function bearer(request: FastifyRequest): string | undefined {
  if (timesSent(request, 'authorization') > 1) throw unauthorized('The Authorization header was sent more than once; send it once.')
  const header = request.headers.authorization
  const match = header && /^Bearer +(\S+) *$/i.exec(header)
  return match ? match[1] : undefined
}

export function makeGuard(ctx: AppContext, limits: RateLimits) {
  /** Counts the request against its key's budget, once; the 429 to answer past it. */
  async function count(request: FastifyRequest, reply: FastifyReply): Promise<ApiError | undefined> {
    const credential = request.credential!
    if (credential.counted) return undefined
    credential.counted = true
    return limits.countKey(request, reply)
  }

  /** The project of the key, through the gates of `route`; throws 401, 403 or 429, in that order. */
  async function lookUp(request: FastifyRequest, reply: FastifyReply, route: RouteSpec): Promise<Principal> {
    const credential = request.credential!
    const project = await ctx.repos.projects.findByKeyHash(credential.keyHash)
    credential.lookedUp = true
    if (!project) throw unauthorized('The API key is unknown, revoked or expired.')
    credential.live = true
    // A live key's requests all count, those refused by the gates too.
    const overBudget = await count(request, reply)
    if (route.tag === 'beta' && !project.beta_enabled) {
      throw new ApiError('beta_disabled', 'The beta feature is not enabled for this project.')
    }
    if (WRITE_METHODS.has(route.method) && project.plan !== 'pro') {
      throw new ApiError('plan_required', 'Writes need the Pro plan.')
    }
    if (overBudget) throw overBudget
    return { projectId: project.id }
  }

  /** Before an answer that does not prove the key: throws 401 or 403 when the key is why (see settle below). */
  async function settle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const route = request.routeOptions.config.route
    if (!route || !request.credential || request.credential.lookedUp) return
    request.principal = await lookUp(request, reply, route)
  }

  return {
    async identify(request: FastifyRequest): Promise<void> {
      const route = request.routeOptions.config.route
      if (!route || route.security === 'none') return

      if (route.security === 'AdminToken') {
        // Without ADMIN_TOKEN the operator API does not exist, exactly like an unknown path.
        if (!ctx.config.adminToken) throw new ApiError('not_found', 'No such resource.')
        const token = bearer(request)
        if (!token || !secretsEqual(token, ctx.config.adminToken)) throw unauthorized('A valid admin token is required.')
        return
      }

      const key = bearer(request)
      if (!key || !isApiKeyShape(key)) throw unauthorized('A valid API key is required: Authorization: Bearer fbk_...')
      request.credential = { keyHash: hashApiKey(key), lookedUp: false, live: false, counted: false }
    },

    async authorize(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const route = request.routeOptions.config.route
      if (!route || !request.credential) return
      if (!request.routeOptions.config.readsByKey) {
        request.principal = await lookUp(request, reply, route)
        return
      }
      if (await limits.keyCounted(request)) {
        const overBudget = await count(request, reply)
        if (overBudget) throw overBudget
      } else {
        await lookUp(request, reply, route)
      }
      request.project = { keyHash: request.credential.keyHash, beta: route.tag === 'beta' }
    },

    /**
     * Whether the request was accepted with its key (answered anything but 401): the key was
     * looked up and found live, or a read by key found rows by it (a 2xx or 304 without a
     * lookup; an answer without rows looks the key up). What last_used_at records.
     */
    accepted(request: FastifyRequest, status: number): boolean {
      const credential = request.credential
      return credential !== undefined && (credential.live || (!credential.lookedUp && status < 400))
    },

    /**
     * Before an answer that does not prove the key (a page without rows of a read by key, or a 4xx
     * before the key was looked up): throws 401 or 403 when the key is why. Looks up once a request.
     */
    settle,

    /**
     * What a refusal becomes, for the error handler: a 4xx given before the key was looked up
     * gives way to the key's own 401 or 403 (settle). A 401 carries no RateLimit-* headers (an
     * unknown key has no budget) and counts against the client address's budget of failures,
     * past which it is a 429 (rate-limit.ts). Counts each in the metrics.
     */
    async refusal(request: FastifyRequest, reply: FastifyReply, problem: ApiError): Promise<ApiError> {
      if (problem.status >= 500) return problem
      const settled = await settle(request, reply).then(() => problem, toApiError)
      if (settled.status === 429) ctx.metrics.rateLimited(rateLimitCategory(request))
      if (settled.status !== 401) return settled
      for (const name of RATE_LIMIT_HEADERS) reply.removeHeader(name)
      ctx.metrics.authFailure(isOperator(request) ? 'admin_token' : 'api_key')
      const refused = await limits.countAuthFailure(request)
      if (!refused) return settled
      ctx.metrics.rateLimited('auth_failures')
      return refused
    },
  }
}

export type Guard = ReturnType<typeof makeGuard>
