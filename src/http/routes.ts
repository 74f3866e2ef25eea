// The spec defines every route: each operation in generated/routes.ts becomes one Fastify
// route with the schemas of openapi.yaml, served by the handler of the same operationId.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { routes } from '../../generated/routes.js'
import { ApiError } from './errors.js'
import { JSON_TYPE, JsonText } from './json-text.js'
import { answerIdempotently, secretSourceOf, stagedRun } from './idempotency.js'
import { provesKey, readsByKey, type Guard } from './guard.js'
import { serializerSchema } from './serialization.js'
import { ownRateLimit } from './rate-limit.js'
import { PLUGIN_OPERATIONS, type ApiRequest, type AppContext, type HandlerMap, type OperationId } from './types.js'

async function emptyBodyWhenNone(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {}
}

const isPluginOperation = (id: OperationId): id is keyof typeof PLUGIN_OPERATIONS => id in PLUGIN_OPERATIONS

export function registerRoutes(app: FastifyInstance, ctx: AppContext, handlers: HandlerMap, guard: Guard): void {
  for (const route of routes) {
    if (isPluginOperation(route.operationId)) continue
    // Each handler is typed by its own operation; here they are all called alike.
    const handler = handlers[route.operationId] as unknown as (
      request: ApiRequest<OperationId>,
      ctx: AppContext,
    ) => Promise<{ status: number; body?: unknown; headers?: Record<string, string> }>
    const ownBudget = ownRateLimit(ctx.config, route)
    const byKey = readsByKey(handler)
    const secret = secretSourceOf(handler)
    const staged = stagedRun(handler)
    if (byKey && (route.method !== 'GET' || route.security !== 'ApiKey')) {
      throw new Error(`${route.operationId} (${route.method}, ${route.security}) cannot read by key: only GETs secured by an API key may (guard.ts)`)
    }
    app.route({
      method: route.method,
      url: route.url,
      // The public portal counts per client address, all its operations against one budget
      // (see rate-limit.ts); public signup and each operator operation have budgets of their own.
      config: { route, readsByKey: byKey, ...(ownBudget ? { rateLimit: ownBudget } : {}) },
      schema: {
        params: route.schema.params,
        querystring: route.schema.querystring,
        ...(route.schema.body ? { body: route.schema.body } : {}),
        // Response schemas compile the serializer; tests validate responses against the spec.
        response: Object.fromEntries(Object.entries(route.schema.response).map(([status, schema]) => [status, serializerSchema(schema)])),
      },
      // Sent without a body, an operation whose body is optional sees (and validates) `{}`.
      ...(route.bodyOptional ? { preValidation: emptyBodyWhenNone } : {}),
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        if (request.idempotency) return answerIdempotently(request, reply, ctx, await staged(request, ctx), secret)
        const result = await handler(request as unknown as ApiRequest<OperationId>, ctx)
        if (byKey && !provesKey(result.body)) await guard.settle(request, reply)
        if (result.headers) reply.headers(result.headers)
        reply.code(result.status)
        if (result.status === 204 || result.status === 304) return reply.send()
        // Sent as it is: with a JSON type, Fastify does not serialize a string again.
        if (result.body instanceof JsonText) return reply.type(JSON_TYPE).send(result.body.text)
        return reply.send(result.body)
      },
    })
  }
}

/**
 * The spec's paths, segment by segment, with the methods each has, to tell a wrong method (405)
 * from an unknown path (404). The operator API's paths are kept apart: without ADMIN_TOKEN they
 * do not exist, for every method (api-contract §3).
 */
const templates = [...new Set(routes.map((r) => r.path))].map((path) => {
  const ofPath = routes.filter((r) => r.path === path)
  return {
    segments: path.split('/').map((segment) => (/^\{[^}]+\}$/.test(segment) ? undefined : segment)),
    methods: ofPath.map((r) => r.method),
    operator: ofPath.every((r) => r.security === 'AdminToken'),
  }
})

/**
 * A path's segments as the router reads them: each percent-decoded where it decodes (the router
 * serves `/v1/beta/%70rograms` as `/v1/beta/programs`, so its wrong methods are 405s too).
 */
function decodedSegments(pathname: string): string[] {
  return pathname.split('/').map((segment) => {
    try {
      return decodeURIComponent(segment)
    } catch {
      return segment
    }
  })
}

/** The methods a path has (HEAD wherever GET is); undefined for a path the API does not have. */
export function allowedMethods(pathname: string, operatorApi: boolean): string[] | undefined {
  const segments = decodedSegments(pathname)
  const match = templates.find(
    (t) =>
      (operatorApi || !t.operator) &&
      t.segments.length === segments.length &&
      // A parameter takes any segment, an empty one too, as the router does (GET /v1/changelog/ is the entry '').
      t.segments.every((literal, i) => literal === undefined || literal === segments[i]),
  )
  if (!match) return undefined
  return match.methods.includes('GET') ? [...match.methods, 'HEAD'] : match.methods
}

/** A request target's path: an absolute-form target (`GET http://host/path`, RFC 9112 §3.2.2) less its scheme and authority. */
const ORIGIN = /^[a-z][a-z\d+.-]*:\/\/[^/?#]*/i

/**
 * The path a request is for, as its operation knows it: the route's pattern when one took it
 * (`/portal/:project_id/changelog.atom`), otherwise the target's path less an absolute form's
 * scheme and authority, percent-decoded where it decodes.
 */
export function routedPath(request: FastifyRequest): string {
  if (request.routeOptions.url) return request.routeOptions.url
  const path = request.url.replace(ORIGIN, '').split('?')[0] || '/'
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}

/**
 * The answer for a request no route took: 405 with `Allow` for a path the API has (an operation's,
 * or one of `assets`, the paths outside the spec a plugin serves, with their methods), otherwise 404.
 */
export function notFoundOrNotAllowed(request: FastifyRequest, operatorApi: boolean, assets: ReadonlyMap<string, string[]>): ApiError {
  // The router ends the path at a `?` or a `#` (a fragment, which a client should not send).
  const pathname = request.url.replace(ORIGIN, '').split(/[?#]/)[0] || '/'
  const allow = allowedMethods(pathname, operatorApi) ?? assets.get(decodedSegments(pathname).join('/'))
  if (allow && !allow.includes(request.method)) {
    return new ApiError('method_not_allowed', `${request.method} is not allowed here; use ${allow.join(', ')}.`, {
      headers: { allow: allow.join(', ') },
    })
  }
  return new ApiError('not_found', 'No such resource.')
}

