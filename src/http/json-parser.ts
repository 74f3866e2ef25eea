// The only body parser: application/json (with any parameters). Everything else is 415.
// An empty body counts as no body, so a DELETE sent with a JSON content type still works, and
// so does one sent without a Content-Type in chunked framing that holds nothing.
// JSON is UTF-8 (RFC 8259 §8.1, which defines no charset parameter: one sent changes nothing),
// so bytes that are not UTF-8 are invalid JSON, not text to store with U+FFFD in their place.
import { isUtf8 } from 'node:buffer'
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import secureJson from 'secure-json-parse'
import { ApiError, notJson } from './errors.js'
import { isPortal, notForm } from './form-parser.js'
import { unstorable } from '../domain/text.js'

/**
 * How deep a body may nest, and how many fields or items one object or array may hold: far
 * beyond any operation's schema (a few levels, at most a hundred items), far short of what makes
 * a body of 1 MiB expensive. An outside review measured, on the main thread: half a million nested
 * arrays, 140 ms to parse; 90 000 unknown fields, 500 ms to validate (one error each).
 */
const MAX_DEPTH = 64
const MAX_MEMBERS = 1000

/**
 * Why `text` is past those bounds, found in one pass before it is parsed (parsing 90 000 fields
 * alone takes 45 ms, and listing them as many again); undefined when it is within them, or is no
 * JSON at all, which the parser then says.
 */
function pastBounds(text: string): string | undefined {
  // Each array and object open at this point: whether it is an object, and its members so far.
  const open: { object: boolean; members: number }[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // A string: to its closing quote, over escaped characters.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) i++
        else if (d === 0x22) break
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (open.push({ object: c === 0x7b, members: 1 }) > MAX_DEPTH) return `must not nest arrays and objects more than ${MAX_DEPTH} deep`
    } else if (c === 0x5d || c === 0x7d) {
      open.pop()
    } else if (c === 0x2c) {
      const innermost = open.at(-1)
      if (innermost && ++innermost.members > MAX_MEMBERS) {
        return innermost.object ? `must not hold an object of more than ${MAX_MEMBERS} fields` : `must not hold an array of more than ${MAX_MEMBERS} items`
      }
    }
  }
  return undefined
}

/**
 * Why the first string (value or key) that PostgreSQL text could not hold as sent cannot be
 * stored (domain/text.ts). Walked with an explicit stack, since bodies may nest deeper than the call stack.
 */
function unstorableString(value: unknown): string | undefined {
  const stack: unknown[] = [value]
  while (stack.length) {
    const node = stack.pop()
    if (typeof node === 'string') {
      const reason = unstorable(node)
      if (reason) return reason
    } else if (Array.isArray(node)) {
      // One push an element: spread into arguments, an array of a few hundred thousand
      // elements overflowed the call stack (a 500 to any body of one, before any route's check).
      for (const child of node) stack.push(child)
    } else if (node && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) stack.push(key, child)
    }
  }
  return undefined
}

const refuse = (message: string) => new ApiError('validation_failed', `body ${message}`, { errors: [{ in: 'body', path: '', message }] })

/** Whether the request comes with a body (its framing says so; a GET's is never read). */
const hasBody = (headers: IncomingHttpHeaders) => headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0

/**
 * A body is read as sent: one in a content coding (gzip, say) would be parsed as if it were not,
 * or refused as bad JSON for a reason the client cannot see (RFC 9110 §8.4.1: 415). Run by
 * app.ts before the body is read, after the guard and the headers' own 400s.
 */
export function refuseCodedBody(request: FastifyRequest): void {
  const coding = request.headers['content-encoding']?.trim().toLowerCase()
  if (coding && coding !== 'identity' && hasBody(request.headers)) {
    throw new ApiError('unsupported_media_type', `Request bodies are not accepted in a content coding (Content-Encoding: ${coding.slice(0, 40)}); send them as they are.`)
  }
  // Node decodes chunked framing only, and passes a body in any other transfer coding on as
  // it came (Transfer-Encoding: gzip, chunked).
  const transfer = request.headers['transfer-encoding']?.toLowerCase()
  if (transfer && transfer.split(',').some((part) => part.trim() !== 'chunked')) {
    throw new ApiError('unsupported_media_type', `Request bodies are not accepted in a transfer coding other than chunked (Transfer-Encoding: ${transfer.slice(0, 40)}); send them as they are.`)
  }
}

export function registerJsonParser(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(/^application\/json(\s*;.*)?$/i, { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    // No operation here: the answer is the 404, whatever the body holds, so it is not parsed.
    if (request.is404) return done(null, undefined)
    // A portal form sent as JSON is refused (form-parser.ts) without parsing it first.
    if (isPortal(request)) return done(notForm(), undefined)
    if (!isUtf8(body as Buffer)) return done(new ApiError('invalid_json', 'The body is not valid JSON: JSON is UTF-8, and these bytes are not.'), undefined)
    const text = (body as Buffer).toString('utf8')
    if (text.trim() === '') return done(null, undefined)
    const tooLarge = pastBounds(text)
    if (tooLarge) return done(refuse(tooLarge), undefined)
    let value: unknown
    try {
      // Deep nesting (RangeError) is the client's fault as much as bad syntax.
      value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
    } catch (error) {
      if (error instanceof SyntaxError && /forbidden prototype property/.test(error.message)) {
        return done(refuse('must not contain __proto__ or constructor.prototype'), undefined)
      }
      return done(new ApiError('invalid_json', 'The body is not valid JSON.'), undefined)
    }
    const problem = unstorableString(value)
    if (problem) return done(refuse(problem), undefined)
    done(null, value)
  })
  // Any other type, or none (Fastify answers 415 before reading a thing). Without a Content-Type,
  // a body framed as chunked may still hold nothing: Node's http.request sends a body-less POST
  // that way, and the conventions say an action's body may be omitted. It is read until its
  // first byte, which makes it a 415, or its end, which makes it no body.
  app.addContentTypeParser('*', (request, payload, done) => {
    const refusal = () => (isPortal(request) ? notForm() : notJson())
    if (request.headers['content-type'] !== undefined) return done(refusal(), undefined)
    let settled = false
    const settle = (error: Error | null) => {
      if (settled) return
      settled = true
      payload.removeListener('data', onData)
      done(error, undefined)
    }
    const onData = (chunk: Buffer) => chunk.length > 0 && settle(refusal())
    payload.on('data', onData)
    payload.once('end', () => settle(null))
    payload.once('error', (error) => settle(error))
  })
}
