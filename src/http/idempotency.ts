// Idempotency-Key on every POST under /v1 (Stripe / IETF draft semantics). Not on the operator
// API: its answers hold new API keys, and no answer holding one is ever stored. The first
// request with a key claims it in the database; its 2xx answer is stored and replayed to
// retries with the same method, path and body for 24 hours (`Idempotency-Replayed: true`).
// The same key with another body is 422; a retry while the first is still running is 409.
// Failed requests (4xx, 5xx) release the key, so validation failures are never stored and a
// retry after a failure runs again.
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'
import type { AppContext } from './types.js'

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: { scope: string; key: string }
  }
}

const KEY = /^[\x20-\x7E]{1,255}$/
/** One claim in this many also deletes expired records, so the table stays at a day's keys. */
const PURGE_EVERY = 100

function idempotencyKey(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key']
  if (raw === undefined) return undefined
  if (typeof raw !== 'string' || !KEY.test(raw)) {
    const message = 'must be 1 to 255 printable ASCII characters, sent once'
    throw new ApiError('validation_failed', `header/Idempotency-Key ${message}`, { errors: [{ in: 'header', path: '/Idempotency-Key', message }] })
  }
  return raw
}

const requestHash = (request: FastifyRequest) =>
  createHash('sha256').update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`).digest('hex')

export function registerIdempotency(app: FastifyInstance, ctx: AppContext): void {
  const repo = ctx.repos.idempotency

  // After authentication and validation, before the handler.
  app.addHook('preHandler', async (request, reply) => {
    const route = request.routeOptions.config.route
    if (request.method !== 'POST' || !route || route.security !== 'ApiKey') return
    const key = idempotencyKey(request)
    if (key === undefined) return
    const scope = request.principal!.projectId
    const hash = requestHash(request)
    let held = await repo.claim(scope, key, hash)
    // A record released between our insert and our read: claim once more.
    if (held === undefined) held = await repo.claim(scope, key, hash)
    if (held === true || held === undefined) {
      request.idempotency = { scope, key }
      if (Math.random() * PURGE_EVERY < 1) await repo.purgeExpired()
      return
    }
    if (held.request_hash !== hash) {
      throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with another request; use a new key for a new request.')
    }
    if (held.state === 'in_progress') {
      throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is still running; retry shortly.', { headers: { 'retry-after': '1' } })
    }
    reply.code(held.response_status!).header('idempotency-replayed', 'true').type('application/json; charset=utf-8')
    if (held.response_location) reply.header('location', held.response_location)
    return reply.send(held.response_body)
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotency
    if (!claim) return payload
    request.idempotency = undefined
    if (reply.statusCode >= 200 && reply.statusCode < 300 && typeof payload === 'string') {
      const location = reply.getHeader('location')
      await repo.complete(claim.scope, claim.key, { status: reply.statusCode, location: typeof location === 'string' ? location : undefined, body: payload })
    } else {
      await repo.release(claim.scope, claim.key)
    }
    return payload
  })
}
