// The only body parser: application/json (with any parameters). Everything else is 415.
// An empty body counts as no body, so a DELETE sent with a JSON content type still works.
import type { FastifyInstance } from 'fastify'
import secureJson from 'secure-json-parse'
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
      // Deep nesting (RangeError) is the client's fault as much as bad syntax.
      value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
    } catch (error) {
      if (error instanceof SyntaxError && /forbidden prototype property/.test(error.message)) {
        return done(new ApiError('validation_failed', 'The body must not set __proto__ or constructor.prototype.', { errors: [{ in: 'body', path: '', message: 'must not contain __proto__ or constructor.prototype' }] }), undefined)
      }
      return done(new ApiError('invalid_json', 'The body is not valid JSON.'), undefined)
    }
    if (NUL_ESCAPE.test(text)) {
      return done(new ApiError('validation_failed', 'Strings must not contain the NUL character (\\u0000).', { errors: [{ in: 'body', path: '', message: 'must not contain \\u0000' }] }), undefined)
    }
    done(null, value)
  })
}
