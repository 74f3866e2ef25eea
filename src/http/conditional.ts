// Conditional requests (RFC 9110 §13) for the authenticated API: every 200 to a GET or PATCH
// carries a strong ETag, `If-None-Match` on a GET answers 304, and `If-Match` on a PATCH or
// DELETE answers 412 when the resource changed since the client read it.
//
// A resource that can be written conditionally (a beta program, a tester, a changelog entry, a
// webhook endpoint)
// gets its tag from the database, computed from its row (db/repos/etag.ts): the handler sends it,
// and the repository checks If-Match in the statement that writes, so that two writes holding
// one tag never both succeed. Any other answer (a list, feedback) is tagged here by a hash of the
// bytes sent. The header grammar is read here only, for the API and the public portal alike.
import { hash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Precondition } from '../db/repos/etag.js'
import { ApiError, invalidField } from './errors.js'

export const entityTag = (payload: string): string => `"${hash('sha256', payload, 'base64url').slice(0, 27)}"`

const entityTags = (header: string): string[] => header.split(',').map((tag) => tag.trim())

/** Whether an If-None-Match value names `etag`, by the weak comparison a GET uses. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  return header !== undefined && entityTags(header).some((tag) => tag === '*' || tag.replace(/^W\//, '') === etag)
}

/**
 * What an If-Match value requires (undefined when there is none). Strong comparison: a weak tag
 * never matches, so it is dropped, and a list of weak tags alone can match nothing.
 */
export function ifMatch(header: string | string[] | undefined): Precondition | undefined {
  if (header === undefined) return undefined
  const tags = entityTags([header].flat().join(','))
  return tags.includes('*') ? '*' : tags.filter((tag) => tag.startsWith('"'))
}

export const preconditionFailed = (): ApiError =>
  new ApiError('precondition_failed', 'The resource changed since it was read (If-Match does not match its ETag); read it again and retry.')

const CONDITIONAL_READS = new Set(['GET', 'HEAD', 'PATCH'])

/** The most an If-None-Match or If-Match value may hold: openapi.yaml's IfNoneMatch and IfMatch (a test holds them equal). */
export const TAG_LIST_MAX = 1024
const BOUNDED_HEADERS = [
  ['if-none-match', 'If-None-Match'],
  ['if-match', 'If-Match'],
] as const

export function registerConditionalRequests(app: FastifyInstance): void {
  // A longer list of tags is a 400, as the spec's bound says, not a list searched tag by tag. An
  // unknown path or method is its 404 or 405 whatever the headers (contract §1; found by a fuzz).
  app.addHook('preValidation', async (request) => {
    if (request.is404) return
    for (const [header, name] of BOUNDED_HEADERS) {
      const value = request.headers[header]
      if (value !== undefined && String(value).length > TAG_LIST_MAX) throw invalidField('header', `/${name}`, `must be at most ${TAG_LIST_MAX} characters`)
    }
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.config.route
    if (!route || route.security !== 'ApiKey' || reply.statusCode !== 200 || typeof payload !== 'string') return payload
    if (!CONDITIONAL_READS.has(request.method)) return payload
    const given = reply.getHeader('etag')
    const etag = typeof given === 'string' ? given : entityTag(payload)
    reply.header('etag', etag)
    reply.header('cache-control', 'private, no-cache')
    reply.header('vary', 'Authorization')
    if (request.method !== 'PATCH' && noneMatch(request.headers['if-none-match'], etag)) {
      reply.code(304)
      reply.removeHeader('content-type')
      reply.removeHeader('content-length')
      return ''
    }
    return payload
  })
}
