// One AJV per request part. Bodies are validated exactly as sent: no coercion, no stripping
// of unknown fields, no defaults filled in (the handlers apply the documented defaults). Path
// and query strings arrive as text: query integers alone are converted, and only when they are
// plain decimal integers.
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import { Ajv2020, type Options, type ValidateFunction } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify'
import { parseUrl } from '../domain/urls.js'
import { ApiError, invalidField } from './errors.js'
import { pointerToken } from './field-messages.js'
import { timesSent } from './raw-headers.js'

// RFC 3339 with a mandatory zone. ajv-formats also accepts a space separator and second 60,
// which Date cannot parse; a value that passes here always becomes a valid Date. The fraction
// may have any number of digits, as RFC 3339 allows (the schema's maxLength bounds them): Date
// keeps the first three. Ten or more were a 400 (found by a contract review).
const DATE_TIME = /^[1-9]\d{3}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/
// Years 1000 to 9999, in UTC too: every timestamp then has the four-digit year the response
// format promises, and sorts and round-trips (cursors) like any other. `Date.UTC` maps years
// 0..99 to 1900..1999, so the bounds are written out.
const EARLIEST_TIME = Date.parse('1000-01-01T00:00:00.000Z')
const LATEST_TIME = Date.parse('9999-12-31T23:59:59.999Z')

/** The `date-time` format of this API: see `InputTimestamp` in openapi.yaml. */
export function isDateTime(value: string): boolean {
  if (!DATE_TIME.test(value)) return false
  // RFC 3339's hours are 00 to 23 (Date.parse takes 24:00 for the next day's midnight), and its
  // offsets name hours and minutes as times do.
  const offset = /[+-](\d{2}):(\d{2})$/.exec(value)
  if (Number(value.slice(11, 13)) > 23 || Number(value.slice(14, 16)) > 59 || Number(value.slice(17, 19)) > 59) return false
  if (offset && (Number(offset[1]) > 23 || Number(offset[2]) > 59)) return false
  const month = Number(value.slice(5, 7))
  const day = Number(value.slice(8, 10))
  const time = Date.parse(value.toUpperCase())
  if (!(time >= EARLIEST_TIME && time <= LATEST_TIME)) return false
  // Date.parse rolls 2026-02-30 over to March; the calendar date must survive the round trip.
  const probe = new Date(Date.UTC(Number(value.slice(0, 4)), month - 1, day))
  return probe.getUTCMonth() === month - 1 && probe.getUTCDate() === day
}

/**
 * The request schemas are generated from openapi.yaml (generated/routes.ts) and fixed at build
 * time, so they are held to JSON Schema's meta-schema once, by test/http/request-schemas.test.ts,
 * not again by every process that compiles them: AJV compiling its 2020-12 meta-schema took about
 * 0.1 s of each start, of the server, of every CLI command and of every test process. Strict
 * mode's checks (an unknown keyword, a type that contradicts another keyword) still run at compile.
 */
export const AJV_OPTIONS = { strict: true, allErrors: true, verbose: true, unicodeRegExp: true } as const

function makeAjv(options: Options): Ajv2020 {
  const ajv = new Ajv2020({ ...AJV_OPTIONS, validateSchema: false, ...options })
  formats.default(ajv, { mode: 'full', formats: ['email', 'int32', 'int64'] })
  ajv.addFormat('date-time', { type: 'string', validate: isDateTime })
  // The `uri` format of request bodies (see `HttpUrl` in openapi.yaml): domain/urls.ts.
  ajv.addFormat('uri', { type: 'string', validate: (value: string) => parseUrl(value) !== undefined })
  // An annotation for error messages (field-messages.ts); it validates nothing.
  ajv.addKeyword({ keyword: 'x-expected', schemaType: 'string' })
  return ajv
}

const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false, useDefaults: false })
const queryAjv = makeAjv({ coerceTypes: false, removeAdditional: false, useDefaults: true })
const paramsAjv = makeAjv({ coerceTypes: false, removeAdditional: false, useDefaults: false })

// AJV's own coercion turns "1e309" into Infinity and lets it through; ours converts only plain
// decimal integers and leaves anything else as text, for the schema to refuse with a 400.
const INTEGER = /^-?\d{1,16}$/
function coerceIntegers(schema: { properties?: Record<string, { type?: unknown }> }): (data: Record<string, unknown>) => void {
  const names = Object.entries(schema.properties ?? {})
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name)
  return (data) => {
    for (const name of names) {
      const value = data[name]
      if (typeof value === 'string' && INTEGER.test(value)) data[name] = Number(value)
    }
  }
}

const cache = new WeakMap<object, ValidateFunction>()

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const cached = cache.get(schema)
  if (cached) return cached
  let validate: ValidateFunction
  if (httpPart === 'querystring') {
    const check = queryAjv.compile(schema)
    const coerce = coerceIntegers(schema)
    validate = Object.assign((data: Record<string, unknown>) => {
      coerce(data)
      const valid = check(data)
      validate.errors = check.errors
      return valid
    }, { errors: null }) as unknown as ValidateFunction
  } else {
    validate = (httpPart === 'body' ? bodyAjv : paramsAjv).compile(schema)
  }
  cache.set(schema, validate)
  return validate
}

/** The 400 for a path that is not percent-encoded UTF-8, whoever finds it (here, or the router: app.ts). */
export const undecodablePath = (): ApiError =>
  new ApiError('validation_failed', 'The URL is not valid percent-encoded UTF-8.', { errors: [{ in: 'path', path: '', message: 'is not valid percent-encoding' }] })

/** Set on a request whose path the router could not have decoded (routableUrl). */
const UNDECODABLE_PATH = Symbol('undecodable path')

/**
 * Fastify's rewriteUrl. The router refuses a path that is not percent-encoded UTF-8 (`%ZZ`, an
 * encoded lone surrogate) before any hook runs, so its 400 came ahead of the 401 and 403 that
 * the contract puts first. Such a path is routed as the text it is (each `%` escaped), marked,
 * and refused by refuseUndecodableUrl once the guard has had its say. Any other URL is left as
 * it came.
 */
export function routableUrl(request: IncomingMessage): string {
  const url = request.url ?? '/'
  const end = url.indexOf('?')
  const path = end < 0 ? url : url.slice(0, end)
  if (!path.includes('%') || decoded(path) !== undefined) return url
  Object.assign(request, { [UNDECODABLE_PATH]: true })
  return path.replaceAll('%', '%25') + (end < 0 ? '' : url.slice(end))
}

/** RFC 3986's host (a reg-name, an IPv4 address or a bracketed IPv6 one), then an optional port. */
const HOST = /^(?:\[([^\]]*)\]|[\w\-.~!$&'()*+,;=%]*)(?::(\d{1,5}))?$/

/**
 * For the preValidation hook, so after the guard: a Host header sent twice, or one that is no host
 * and port, is a 400 (RFC 9112 §3.2: a server MUST answer 400). An empty one is what a request
 * without an authority sends; HTTP/1.0 may send none.
 */
export function refuseInvalidHost(request: FastifyRequest): void {
  const host = request.headers.host
  // HTTP/1.0 has no Host; HTTP/1.1 requires one (RFC 9112 §3.2). Node's own check, which answered
  // a bare 400 before any hook, is off (app.ts), so that this one answers as every 400 does.
  if (host === undefined) {
    if (request.raw.httpVersion === '1.0') return
    throw invalidField('header', '/Host', 'is required: one host name or address, with an optional port')
  }
  const match = HOST.exec(host)
  const valid = match !== null && (match[1] === undefined || isIP(match[1]) === 6) && (match[2] === undefined || Number(match[2]) <= 65535)
  if (!valid || timesSent(request, 'host') > 1) throw invalidField('header', '/Host', 'must be one host name or address, with an optional port, sent once')
}

/**
 * An Expect other than 100-continue is a 400: it is the only expectation this server meets
 * (RFC 9110 §10.1.1 lets it answer so). Node answered a bare 417 before any hook; the server
 * passes such a request on (app.ts) to be answered here, after the key, before its body is awaited.
 */
export function refuseUnmetExpectation(request: FastifyRequest): void {
  const expect = request.headers.expect
  if (expect !== undefined && expect.trim().toLowerCase() !== '100-continue') {
    throw invalidField('header', '/Expect', 'must be 100-continue, the only expectation this server meets, or be left out')
  }
}

/**
 * A Content-Type sent twice is a 400: Node keeps the first, and which one the client meant
 * cannot be known (found by an attacker review; Authorization, Host and Idempotency-Key are held
 * to once too).
 */
export function refuseRepeatedContentType(request: FastifyRequest): void {
  if (timesSent(request, 'content-type') > 1) throw invalidField('header', '/Content-Type', 'must be sent once')
}

/**
 * A preValidation hook, so after the guard: an operation's path the router could not have
 * decoded (routableUrl), or a query string whose names or values are not percent-encoded UTF-8 (`%ZZ`,
 * a cut-off `%E0%A4%A`, an encoded lone surrogate), is a 400. The query parser keeps such text
 * as it came, so a free-text parameter (a changelog `label`) would otherwise take `%ZZ` for the
 * `%25ZZ` it cannot be told from.
 */
export async function refuseUndecodableUrl(request: FastifyRequest): Promise<void> {
  // Under an operation's route; a path that names none is a 404 like any unknown path.
  if (UNDECODABLE_PATH in request.raw && request.routeOptions.config.route) throw undecodablePath()
  // An unknown path or method is its 404 or 405 whatever its query (contract §1; found by a fuzz).
  if (request.is404) return
  const url = request.raw.url ?? ''
  const start = url.indexOf('?')
  // Only a % escape can fail to decode: most query strings have none.
  if (start < 0 || !url.includes('%', start)) return
  // An operation that ignores the parameters it does not define (the portal's pages and feeds)
  // ignores them whatever their bytes: a link's `utm_campaign=caf%E9`, from a mailer that writes
  // Latin-1, opens the page.
  const querystring = request.routeOptions.config.route?.schema.querystring
  const defined = querystring?.additionalProperties === false ? undefined : new Set(Object.keys(querystring?.properties ?? {}))
  for (const pair of url.slice(start + 1).split('&')) {
    const [name = '', value = ''] = pair.split(/=(.*)/s)
    const decodedName = decoded(name)
    if (defined && (decodedName === undefined || !defined.has(decodedName))) continue
    if (decodedName === undefined || decoded(value) === undefined) {
      // The name only when it decodes: an undecodable one is not echoed.
      const path = decodedName === undefined ? '' : `/${pointerToken(decodedName)}`
      const message = 'must be percent-encoded UTF-8'
      throw new ApiError('validation_failed', `query${path} ${message}`, { errors: [{ in: 'query', path, message }] })
    }
  }
}

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return undefined
  }
}
