// The only body parser: application/json (with any parameters). Everything else is 415.
// An empty body counts as no body, so a DELETE sent with a JSON content type still works.
import type { FastifyInstance } from 'fastify'
import { ApiError } from './errors.js'

// PostgreSQL text cannot hold U+0000. Refusing it here, as a 400, keeps it from ever reaching
// the database and failing there as a 500. An escaped backslash before "u0000" is plain text.
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/i

export function registerJsonParser(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(/^application\/json(\s*;.*)?$/i, { parseAs: 'string', bodyLimit }, (_request, body, done) => {
    const text = body as string
    if (text.trim() === '') return done(null, undefined)
    let value: unknown
    try {
      // JSON.parse throws on deep nesting (RangeError) as on bad syntax: both are the client's.
      value = JSON.parse(text, (key, v) => (key === '__proto__' ? undefined : v))
    } catch {
      return done(new ApiError('invalid_json', 'The body is not valid JSON.'), undefined)
    }
    if (NUL_ESCAPE.test(text)) {
      return done(new ApiError('validation_failed', 'Strings must not contain the NUL character (\\u0000).', { errors: [{ in: 'body', path: '', message: 'must not contain \\u0000' }] }), undefined)
    }
    done(null, value)
  })
}
