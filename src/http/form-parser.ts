// HTML forms (application/x-www-form-urlencoded) for the portal's pages, and only for them:
// the /v1 API keeps answering 415 to anything but JSON, and a portal form refuses JSON.
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError, invalidField, notJson } from './errors.js'

const FORM = /^application\/x-www-form-urlencoded(\s*;.*)?$/i
export const isPortal = (request: FastifyRequest) => request.routeOptions.config.route?.tag === 'portal'
/** The 415 for a portal form sent as anything but a form. */
export const notForm = () => new ApiError('unsupported_media_type', 'Portal forms are application/x-www-form-urlencoded.')
/**
 * The most fields a portal form may have: its page's form sends two or three. Counted before
 * anything is decoded: a form of 200 000 field names held the event loop 0.3 s to decode and
 * then refuse field by field (found by an outside review), and the portal takes forms without a key.
 */
const MAX_FORM_FIELDS = 20

/** Whether `text` has more than MAX_FORM_FIELDS `&`-separated fields, counted to the first one past it. */
function tooManyFields(text: string): boolean {
  let fields = 1
  for (let at = text.indexOf('&'); at >= 0; at = text.indexOf('&', at + 1)) if (++fields > MAX_FORM_FIELDS) return true
  return false
}
/**
 * Fields in a null-prototype object; a repeated field becomes an array, which the schema refuses.
 * Its values are appended in place: copying the array at each repeat made a body of one field
 * repeated take time by the square of its length (a 40 KB form held the event loop 15 s).
 */
export function parseForm(text: string): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = Object.create(null)
  for (const [name, value] of new URLSearchParams(text)) {
    const seen = fields[name]
    if (seen === undefined) fields[name] = value
    else if (typeof seen === 'string') fields[name] = [seen, value]
    else seen.push(value)
  }
  return fields
}

/**
 * The body as text, each `+` read as the space it stands for, byte by byte: no byte of a multi-byte
 * UTF-8 character is a `+`. A regular expression's replace took 0.1 s of the event loop for a body
 * of a million `+`, and URLSearchParams as long again (found by an outside review: the portal takes
 * forms without a key); this loop takes a millisecond, and leaves URLSearchParams no `+` to replace.
 */
export function formText(body: Buffer): string {
  const bytes = Buffer.from(body)
  for (let at = 0; at < bytes.length; at++) if (bytes[at] === 0x2b) bytes[at] = 0x20
  return bytes.toString('utf8')
}

/**
 * Whether every name and value decodes: `%` escapes of two hex digits that make UTF-8, no lone
 * surrogate. Decoded whole, in one call: an escape cannot run across a `&` or `=` and still make
 * UTF-8, so the whole decodes exactly when each name and value does.
 */
function percentEncoded(text: string): boolean {
  try {
    decodeURIComponent(text)
    return true
  } catch {
    return false
  }
}

export function registerFormParser(app: FastifyInstance, bodyLimit: number): void {
  app.addContentTypeParser(FORM, { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    if (!isPortal(request)) return done(notJson(), undefined)
    const refuse = (message: string) => done(invalidField('body', '', message), undefined)
    // What a browser sends: percent-encoded UTF-8. Anything else would be stored with U+FFFD
    // (bytes that are not UTF-8) or as typed (`%zz`), never as the sender meant it.
    if (!isUtf8(body as Buffer)) return refuse('must be UTF-8, as a page’s form sends it')
    const text = formText(body as Buffer)
    if (tooManyFields(text)) return refuse(`must not have more than ${MAX_FORM_FIELDS} fields; the page's form sends three at most`)
    if (!percentEncoded(text)) return refuse('must be percent-encoded UTF-8, as a page’s form sends it')
    // PostgreSQL text cannot hold U+0000.
    if (text.includes('%00') || text.includes('\u0000')) return refuse('must not contain the NUL character')
    done(null, parseForm(text))
  })
  // A portal form sent as JSON parses, but is not what the page's form sends: refuse it too.
  app.addHook('preValidation', async (request) => {
    if (!isPortal(request) || request.method !== 'POST') return
    if (!FORM.test(String(request.headers['content-type'] ?? ''))) throw notForm()
  })
}
