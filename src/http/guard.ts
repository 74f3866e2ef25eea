// Authentication, the beta feature and the plan are checked here, once, for every route,
// from the route's tag, security and method. It runs in onRequest, before the body is even
// read, so the contract's precedence holds: 401, then 403 (beta before plan), then 400.
import type { FastifyRequest } from 'fastify'
import type { RouteSpec } from '../../generated/routes.js'
import { hashApiKey, isApiKeyShape, secretsEqual } from '../domain/secrets.js'
import { ApiError } from './errors.js'
import type { AppContext, Principal } from './types.js'

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal
  }
  interface FastifyContextConfig {
    route?: RouteSpec
  }
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const unauthorized = (detail: string) => new ApiError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer' } })

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  const match = header && /^Bearer +(\S+) *$/i.exec(header)
  return match ? match[1] : undefined
}

export function makeGuard(ctx: AppContext) {
  return async function guard(request: FastifyRequest): Promise<void> {
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
    const project = await ctx.repos.projects.findByKeyHash(hashApiKey(key))
    if (!project) throw unauthorized('The API key is unknown or revoked.')
    if (route.tag === 'beta' && !project.beta_enabled) {
      throw new ApiError('beta_disabled', 'The beta feature is not enabled for this project.')
    }
    if (WRITE_METHODS.has(route.method) && project.plan !== 'pro') {
      throw new ApiError('plan_required', 'Writes need the Pro plan.')
    }
    request.principal = { projectId: project.id, keyId: project.key_id, plan: project.plan, betaEnabled: project.beta_enabled }
  }
}
