// HTML forms (application/x-www-form-urlencoded) for the portal's pages, and only for them:
// the /v1 API keeps answering 415 to anything but JSON, and a portal form refuses JSON.
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError, invalidField, notJson } from './errors.js'

const FORM = /^application\/x-www-form-urlencoded(\s*;.*)?$/i
const isPortal = (request: FastifyRequest) => request.routeOptions.config.route?.tag === 'portal'
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

/** Whether every name and value decodes: `%` escapes of two hex digits that make UTF-8, no lone surrogate. */
function percentEncoded(text: string): boolean {
  try {
    for (const part of text.split(/[&=]/)) decodeURIComponent(part.replace(/\+/g, ' '))
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
    const text = (body as Buffer).toString('utf8')
    if (!percentEncoded(text)) return refuse('must be percent-encoded UTF-8, as a page’s form sends it')
    // PostgreSQL text cannot hold U+0000.
    if (text.includes('%00') || text.includes('\u0000')) return refuse('must not contain the NUL character')
    done(null, parseForm(text))
  })
  // A portal form sent as JSON parses, but is not what the page's form sends: refuse it too.
  app.addHook('preValidation', async (request) => {
    if (!isPortal(request) || request.method !== 'POST') return
    if (!FORM.test(String(request.headers['content-type'] ?? ''))) {
      throw new ApiError('unsupported_media_type', 'Portal forms are application/x-www-form-urlencoded.')
    }
  })
}
