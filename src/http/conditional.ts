// Conditional requests (RFC 9110 §13) for the authenticated API: every 200 to a GET or PATCH
// carries a strong ETag computed from the exact bytes sent, `If-None-Match` on a GET answers
// 304, and `If-Match` on a PATCH or DELETE answers 412 when the resource changed since the
// client read it. The tag is a hash of the representation, so no table needs a version column.
import { hash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

export const entityTag = (payload: string): string => `"${hash('sha256', payload, 'base64url').slice(0, 27)}"`

/** Whether an If-None-Match / If-Match header value names `etag` (weak comparison for the former). */
function listMatches(header: string | undefined, etag: string, weak: boolean): boolean {
  if (header === undefined) return false
  return header.split(',').some((raw) => {
    const tag = raw.trim()
    if (tag === '*') return true
    return weak ? tag.replace(/^W\//, '') === etag : tag === etag
  })
}

const CONDITIONAL_READS = new Set(['GET', 'HEAD', 'PATCH'])

/** The GET that reads what a PATCH or DELETE is about to change, in the same locale. */
function readUrl(request: FastifyRequest): string {
  const path = request.url.split('?')[0]!
  const body = request.body as { locale?: unknown } | undefined
  const query = request.query as { locale?: unknown }
  const locale = typeof body?.locale === 'string' ? body.locale : typeof query.locale === 'string' ? query.locale : undefined
  return locale ? `${path}?locale=${encodeURIComponent(locale)}` : path
}

export function registerConditionalRequests(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.config.route
    if (!route || route.security !== 'ApiKey' || reply.statusCode !== 200 || typeof payload !== 'string') return payload
    if (!CONDITIONAL_READS.has(request.method)) return payload
    const etag = entityTag(payload)
    reply.header('etag', etag)
    reply.header('cache-control', 'private, no-cache')
    reply.header('vary', 'Authorization')
    if (request.method !== 'PATCH' && listMatches(request.headers['if-none-match'], etag, true)) {
      reply.code(304)
      reply.removeHeader('content-type')
      reply.removeHeader('content-length')
      return ''
    }
    return payload
  })

  // After validation (a bad body is still a 400) and before the handler writes anything.
  app.addHook('preHandler', async (request) => {
    const ifMatch = request.headers['if-match']
    const route = request.routeOptions.config.route
    if (ifMatch === undefined || !route || route.security !== 'ApiKey' || (request.method !== 'PATCH' && request.method !== 'DELETE')) return
    const current = await app.inject({ method: 'GET', url: readUrl(request), headers: { authorization: request.headers.authorization ?? '' } })
    // A resource that is not there is the handler's 404 to give.
    if (current.statusCode !== 200) return
    if (!listMatches(ifMatch, entityTag(current.body), false)) {
      throw new ApiError('precondition_failed', 'The resource changed since it was read (If-Match does not match its ETag); read it again and retry.')
    }
  })
}
