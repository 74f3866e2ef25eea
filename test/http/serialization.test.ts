// The serializer's copy of the response schemas (src/http/serialization.ts): a nullable scalar
// becomes a type list, which fast-json-stringify writes without running AJV; nothing else changes.
import t from 'tap'
import { routes } from '../../generated/routes.js'
import { serializerSchema } from '../../src/http/serialization.js'

t.test('a oneOf of a scalar and null becomes a type list; other oneOfs stay', async (t) => {
  const timestamp = { type: 'string', format: 'date-time', pattern: '^\\d{4}' }
  t.same(serializerSchema({ type: 'object', properties: { at: { oneOf: [timestamp, { type: 'null' }], description: 'When' } } }), {
    type: 'object',
    properties: { at: { type: ['string', 'null'], description: 'When' } },
  })
  t.same(serializerSchema({ type: 'array', items: { oneOf: [{ type: 'null' }, { type: 'integer', minimum: 1 }] } }), { type: 'array', items: { type: ['integer', 'null'] } })
  const either = { oneOf: [{ type: 'string' }, { type: 'integer' }] }
  t.same(serializerSchema(either), either, 'not a nullable: left to fast-json-stringify')
  const nullableObject = { oneOf: [{ type: 'object', properties: {} }, { type: 'null' }] }
  t.same(serializerSchema(nullableObject), nullableObject, 'an object or null keeps its properties')
  const record = (name: string) => ({ type: 'object', required: [name], properties: { [name]: { type: 'string' } } })
  t.same(serializerSchema({ description: 'A record', oneOf: [record('a'), record('b')] }), { description: 'A record' }, 'a union of records is written as the value is')
})

t.test("every response schema's nullable fields are written without AJV", async (t) => {
  const oneOfs = (node: unknown): number =>
    Array.isArray(node) ? node.reduce((n: number, x) => n + oneOfs(x), 0)
    : node && typeof node === 'object' ? ('oneOf' in node ? 1 : 0) + Object.values(node).reduce((n: number, x) => n + oneOfs(x), 0)
    : 0
  const before = routes.reduce((n, r) => n + oneOfs(r.schema.response), 0)
  const after = routes.reduce((n, r) => n + Object.values(r.schema.response).reduce((m, s) => m + oneOfs(serializerSchema(s)), 0), 0)
  t.ok(before > 0, `the spec has nullable fields (${before})`)
  t.equal(after, 0, 'none is left to a run-time oneOf')
})
