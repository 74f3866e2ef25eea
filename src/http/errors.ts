// Errors leave by one door: everything thrown in a request ends in sendProblem(), which writes
// an RFC 9457 problem+json body with a stable `code` and the request id, and never a stack,
// SQL text or a driver message.
import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { components } from '../../generated/api.js'
import { fieldErrors, MAX_FIELD_ERRORS, type AjvError } from './field-messages.js'
import type { BusyReason } from './metrics.js'
import { findCause } from '../db/results.js'

/** The largest request body, in bytes (contract §1: 1 MiB; 413 beyond). */
export const BODY_LIMIT = 1024 * 1024

export type Problem = components['schemas']['Problem']
export type ErrorCode = Problem['code']
export type FieldError = NonNullable<Problem['errors']>[number]

const STATUS: Record<ErrorCode, number> = {
  validation_failed: 400,
  invalid_json: 400,
  unauthorized: 401,
  plan_required: 403,
  beta_disabled: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  invalid_transition: 409,
  program_closed: 409,
  limit_exceeded: 409,
  endpoint_disabled: 409,
  idempotency_in_progress: 409,
  secret_rotated: 409,
  precondition_failed: 412,
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  rate_limited: 429,
  internal_error: 500,
  not_implemented: 501,
  unavailable: 503,
}

export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    /** `busy`: a 503 this instance gives because it is busy, not because of the database (metrics.ts). */
    readonly options: { errors?: FieldError[]; headers?: Record<string, string>; cause?: unknown; busy?: BusyReason } = {},
  ) {
    // The cause stays on the server (metrics tell a statement timeout from an outage by it).
    super(detail, options.cause === undefined ? undefined : { cause: options.cause })
    this.status = STATUS[code]
  }
}

export const notFound = (what: string) => new ApiError('not_found', `No ${what} with that id.`)

/** A body in any type but JSON, or in none. */
export const notJson = () => new ApiError('unsupported_media_type', 'Request bodies must be application/json.')

/** A single-field validation failure found by a rule the schema cannot express. */
export function invalidField(part: FieldError['in'], path: string, message: string): ApiError {
  return new ApiError('validation_failed', `${part}${path} ${message}`, { errors: [{ in: part, path, message }] })
}

const MAX_TEXT = 1024
// A client may send any number of fields with names of any length; what a problem echoes back
// stays within the spec's bounds.
const clip = (text: string, max = MAX_TEXT) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** The problem+json body of an error, for the request with id `requestId`. */
export function problemBody(error: ApiError, requestId: string): Problem {
  return {
    type: 'about:blank',
    title: STATUS_CODES[error.status] ?? 'Error',
    status: error.status,
    code: error.code,
    detail: clip(error.detail, 2048),
    ...(error.options.errors ? { errors: error.options.errors.slice(0, MAX_FIELD_ERRORS).map((e) => ({ ...e, path: clip(e.path), message: clip(e.message) })) } : {}),
    request_id: requestId,
  }
}

/**
 * Headers that describe the answer a handler meant to send (its tag, caching and address): a
 * refusal after they were set (the body budget's 503, once the ETag is computed) must not carry
 * them, or a client would keep the problem as the resource under its tag.
 */
const REPRESENTATION_HEADERS = ['etag', 'last-modified', 'cache-control', 'vary', 'location', 'content-location']

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  for (const name of REPRESENTATION_HEADERS) reply.removeHeader(name)
  if (error.options.headers) reply.headers(error.options.headers)
  return reply.code(error.status).type('application/problem+json').send(problemBody(error, request.id))
}

// SQLSTATE classes and driver codes that mean "the database cannot serve this now", not "the
// query was wrong": 08 connection exceptions, 57P0x shutdown / cannot connect now, 57014 a
// statement cancelled by statement_timeout, 55P03 a lock not had within lock_timeout (README,
// Known limits), 53300 too many clients, 25006 a read-only transaction
// (a failover that landed on a standby, or default_transaction_read_only turned on). And any
// FATAL error: PostgreSQL ended the session or refused to start one (55000 a database not
// accepting connections, 3D000 one dropped or renamed, 28P01 a password changed): no statement
// of ours is wrong, and each was a 500 with a stack logged per request (found by a fault review).
// And 40P01 and 40001: PostgreSQL ended the statement to break a deadlock or a serialization
// conflict (a migration holding tables while requests of instances still serving wait), which
// it rolled back and which a retry may pass.
const UNAVAILABLE_SQLSTATE = /^(08|57P0[1-4]|57014|55P03|53300|25006|40P01|40001)/
const FATAL = new Set(['FATAL', 'PANIC'])
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT'])

/** The error, or the cause it wraps, that says the database is out of reach (a lost connection, a shutdown, a timeout). */
export function unavailableCause(error: unknown): { code?: unknown; message?: unknown } | undefined {
  return findCause(
    error,
    (e) =>
      (typeof e.code === 'string' && (UNAVAILABLE_ERRNO.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code))) ||
      (typeof e.severity === 'string' && FATAL.has(e.severity)) ||
      (e instanceof Error && /PGlite is closed/.test(e.message)),
  )
}

export const isUnavailable = (error: unknown): boolean => unavailableCause(error) !== undefined

export const PART: Record<string, FieldError['in']> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }

/** Maps what Fastify, AJV, the drivers or our own code threw to one ApiError. */
export function toApiError(error: FastifyError & { validation?: AjvError[]; validationContext?: string }): ApiError {
  if (error instanceof ApiError) return error
  if (error.validation) {
    const part = PART[error.validationContext ?? 'body'] ?? 'body'
    const errors = fieldErrors(part, error.validation)
    const first = errors[0]
    return new ApiError('validation_failed', first ? `${first.in}${first.path} ${first.message}` : 'The request is invalid.', { errors })
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return error.statusCode === 415
        ? notJson()
        : new ApiError('validation_failed', 'The Content-Length header does not match the body.')
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', `The body is over ${BODY_LIMIT} bytes.`)
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json', 'The body is not valid JSON.')
  }
  if (isUnavailable(error)) {
    return new ApiError('unavailable', 'The database is unavailable; retry shortly.', { headers: { 'retry-after': '2' }, cause: error })
  }
  // Anything else a client could have caused carries a 4xx statusCode from Fastify
  // (a malformed URL, say). Everything without one is ours.
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    if (error.statusCode === 413) return new ApiError('payload_too_large', `The body is over ${BODY_LIMIT} bytes.`)
    if (error.statusCode === 415) return notJson()
    if (error.statusCode === 404) return new ApiError('not_found', 'No such resource.')
    return new ApiError('validation_failed', 'The request could not be parsed.')
  }
  return new ApiError('internal_error', 'An unexpected error occurred; quote the request_id when reporting it.')
}
