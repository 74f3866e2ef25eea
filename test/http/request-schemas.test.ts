// The server compiles the request schemas of generated/routes.ts without holding them to JSON
// Schema's meta-schema (src/http/validation.ts: they are fixed at build time). Here they are, once:
// every params, query and body schema of every operation is valid JSON Schema 2020-12, as AJV
// checks a schema before compiling it.
import { Ajv2020 } from 'ajv/dist/2020.js'
import t from 'tap'
import { routes } from '../../generated/routes.js'
import { AJV_OPTIONS } from '../../src/http/validation.js'

// AJV's own meta-schema check, with the keyword the server adds (an annotation for messages).
const ajv = new Ajv2020({ ...AJV_OPTIONS, validateSchema: true })
ajv.addKeyword({ keyword: 'x-expected', schemaType: 'string' })
const problems = (schema: object): string[] => (ajv.validateSchema(schema) ? [] : (ajv.errors ?? []).map((e) => `${e.instancePath} ${e.message}`))

t.test('every request schema the server compiles is valid JSON Schema 2020-12', async (t) => {
  let checked = 0
  for (const route of routes) {
    for (const [part, schema] of Object.entries({ params: route.schema.params, querystring: route.schema.querystring, body: route.schema.body })) {
      if (!schema) continue
      checked++
      t.same(problems(schema), [], `${route.operationId} ${part}`)
    }
  }
  t.ok(checked > routes.length, `${checked} schemas held to the meta-schema`)
})

t.test('the check finds a schema that is not JSON Schema', async (t) => {
  t.not(problems({ type: 'object', required: 'name' }).length, 0, 'required must be an array')
  t.not(problems({ type: 'string', minLength: -1 }).length, 0, 'minLength must not be negative')
  t.not(problems({ type: 'strin' }).length, 0, 'type must name a type')
})
