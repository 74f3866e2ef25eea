// Validation messages say what is allowed, for every rule of the spec that a person meets first.
// The cases are generated from generated/routes.ts (the spec the server validates with), so an
// enum, a required field or a patterned field added to openapi.yaml is covered here without
// touching this file:
//   - every enum of every request body and query parameter: an unlisted value is refused with
//     `must be one of: <every allowed value>`;
//   - every required body field (and every field another one requires): left out, it is
//     `is required`, at its own path, and the detail names it;
//   - every string with a pattern or a format: the schema says in words what it takes
//     (`x-expected`), and a value of the wrong form is refused with `must be <those words>`.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { routes, type RouteSpec } from '../../generated/routes.js'
import { validatorCompiler } from '../../src/http/validation.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { spec } from '../helpers/spec-check.js'

type Schema = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
type Part = 'body' | 'query'

/** A schema somewhere in a request part, at `pointer` (property names, `0` for an array's items). */
interface Site {
  pointer: string[]
  schema: Schema
}

function* sites(schema: Schema, pointer: string[] = []): Generator<Site> {
  yield { pointer, schema }
  for (const branch of [...(schema.oneOf ?? []), ...(schema.anyOf ?? []), ...(schema.allOf ?? [])]) yield* sites(branch, pointer)
  for (const [name, property] of Object.entries<Schema>(schema.properties ?? {})) yield* sites(property, [...pointer, name])
  if (schema.items && typeof schema.items === 'object') yield* sites(schema.items, [...pointer, '0'])
}

/** A value of roughly the right kind, for fields that must merely be present. */
function sample(schema: Schema): unknown {
  if (Array.isArray(schema.enum)) return schema.enum[0]
  if (schema.default !== undefined) return schema.default
  if (schema.oneOf) return sample(schema.oneOf[0])
  const type = [schema.type].flat()[0]
  if (type === 'object') return Object.fromEntries((schema.required ?? []).map((name: string) => [name, sample(schema.properties[name])]))
  return { integer: schema.minimum ?? 1, number: schema.minimum ?? 1, boolean: false, array: [] }[type as string] ?? 'x'
}

/** `value` at `pointer` in an otherwise empty part. */
function placed(pointer: string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = pointer
  if (head === undefined) return value as Record<string, unknown>
  const inner = rest.length ? placed(rest, value) : value
  return (head === '0' ? [inner] : { [head]: inner }) as Record<string, unknown>
}

const jsonPointer = (pointer: string[]) => pointer.map((s) => `/${s}`).join('')

function mediaType(route: RouteSpec): string {
  const content = spec.paths[route.path][route.method.toLowerCase()].requestBody?.content ?? {}
  return 'application/json' in content ? 'application/json' : Object.keys(content)[0]!
}

interface Case {
  name: string
  route: RouteSpec
  part: Part
  /** The body, or the query parameters. */
  value: Record<string, unknown>
  /** The field the answer must name, as a JSON pointer into the part. */
  path: string
  check: (message: string) => void
  /** Whether the field's error must be the first, so the detail is it. */
  first: boolean
}

async function send(tt: Parameters<typeof call>[0], app: FastifyInstance, key: string, c: Case) {
  const url = c.route.path.replace(/\{[^}]+\}/g, 'x0')
  const headers: Record<string, string> = {}
  if (c.route.security === 'ApiKey') headers.authorization = `Bearer ${key}`
  if (c.route.security === 'AdminToken') headers.authorization = `Bearer ${ADMIN_TOKEN}`
  if (c.part === 'query') {
    const query = new URLSearchParams(Object.entries(c.value).map(([k, v]): [string, string] => [k, String(v)]))
    return call(tt, app, { method: c.route.method, url: `${url}?${query}`, headers })
  }
  const type = mediaType(c.route)
  headers['content-type'] = type
  const body = type === 'application/json' ? c.value : new URLSearchParams(Object.entries(c.value).map(([k, v]): [string, string] => [k, String(v)])).toString()
  return call(tt, app, { method: c.route.method, url, headers, body: typeof body === 'string' ? body : JSON.stringify(body) })
}

/** The request parts a client fills: the body and the query string (path parameters are ids: a bad one is a 404). */
function parts(route: RouteSpec): [Part, Schema][] {
  return [
    ['query', route.schema.querystring as Schema] as [Part, Schema],
    ...(route.schema.body ? [['body', route.schema.body as Schema] as [Part, Schema]] : []),
  ].filter(([, schema]) => Object.keys(schema.properties ?? {}).length > 0)
}

/** Whether `value` fails `schema` as the server validates it. */
const fails = (schema: Schema, part: Part, value: unknown) => !validatorCompiler({ schema, httpPart: part === 'body' ? 'body' : 'querystring', method: 'POST', url: '/' })(value)

const cases: Case[] = []
/** Fields with a pattern or format that openapi.yaml does not explain in words. */
const unexplained: string[] = []
for (const route of routes) {
  for (const [part, root] of parts(route)) {
    const at = (pointer: string[]) => `${route.operationId} ${part}${jsonPointer(pointer)}`
    for (const { pointer, schema } of sites(root)) {
      // Enums: an unlisted value lists every allowed one.
      if (Array.isArray(schema.enum) && pointer.length > 0) {
        cases.push({
          name: `${at(pointer)}: enum`,
          route,
          part,
          value: placed(pointer, 'not-a-listed-value'),
          path: jsonPointer(pointer),
          first: false,
          check(message) {
            const listed = /^must be one of: (.*)$/.exec(message)?.[1]?.split(', ').map((v) => (v.startsWith('"') ? JSON.parse(v) : v))
            t.strictSame(listed, schema.enum, `${at(pointer)}: "${message}" lists every allowed value`)
          },
        })
      }
      // Required fields, and fields another one requires: each left out in turn.
      if (Array.isArray(schema.required)) {
        for (const name of schema.required as string[]) {
          const complete = sample(schema) as Record<string, unknown>
          const { [name]: _omitted, ...rest } = complete
          cases.push({
            name: `${at([...pointer, name])}: required`,
            route,
            part,
            value: placed(pointer, rest),
            path: jsonPointer([...pointer, name]),
            first: pointer.length === 0,
            check: (message) => t.equal(message, 'is required', `${at([...pointer, name])} is required`),
          })
        }
      }
      for (const [property, needed] of Object.entries<string[]>(schema.dependentRequired ?? {})) {
        for (const name of needed) {
          cases.push({
            name: `${at([...pointer, name])}: required with ${property}`,
            route,
            part,
            value: placed(pointer, { [property]: sample(schema.properties[property]) }),
            path: jsonPointer([...pointer, name]),
            first: false,
            check: (message) => t.equal(message, `is required when ${property} is sent`),
          })
        }
      }
      // A pattern or a format (other than a number's size) is explained in words.
      const shaped = schema.pattern !== undefined || (schema.format !== undefined && !['int32', 'int64'].includes(schema.format))
      if (shaped && pointer.length > 0) {
        if (typeof schema['x-expected'] !== 'string') unexplained.push(at(pointer))
        const wrong = [' ', '\u0001', 'not valid!'].find((candidate) => fails(root, part, placed(pointer, candidate)))
        if (typeof schema['x-expected'] === 'string' && wrong !== undefined) {
          cases.push({
            name: `${at(pointer)}: pattern`,
            route,
            part,
            value: placed(pointer, wrong),
            path: jsonPointer(pointer),
            first: false,
            check: (message) => t.equal(message, `must be ${schema['x-expected']}`),
          })
        }
      }
    }
  }
}

t.test('every field with a pattern or a format says in x-expected what it takes', async (t) => {
  t.strictSame(unexplained, [], 'add `x-expected: <what the value must be>` to these schemas in openapi.yaml')
})

t.test('the cases cover what the spec holds today', async (t) => {
  t.ok(cases.length >= 40, `${cases.length} cases`)
  const names = cases.map((c) => c.name)
  for (const expected of [
    'createBetaProgram body/status: enum',
    'listBetaPrograms query/status: enum',
    'submitBetaFeedback body/rating: enum',
    'createChangelogEntry body/title: required',
    'createChangelogEntry body/status: required with published_at',
    'enrollBetaTester body/email: required',
    'createChangelogEntry body/labels/0: pattern',
    'updateBetaProgram body/version: pattern',
  ]) {
    t.ok(names.includes(expected), expected)
  }
})

t.test('every enum, required field and patterned field of the spec is refused in plain words', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const c of cases) {
    const res = await send(t, app, key, c)
    t.equal(res.status, 400, `${c.name}: 400`)
    t.equal(res.json?.code, 'validation_failed', c.name)
    const errors = (res.json?.errors ?? []) as { in: string; path: string; message: string }[]
    const mine = errors.filter((e) => e.in === c.part && e.path === c.path)
    t.equal(mine.length, 1, `${c.name}: one error at ${c.part}${c.path} (got ${JSON.stringify(errors)})`)
    if (!mine[0]) continue
    c.check(mine[0].message)
    if (c.first) t.equal(res.json.detail, `${c.part}${c.path} ${mine[0].message}`, `${c.name}: the detail names the field`)
    else t.match(res.json.detail, /^(body|query)\/\S+ /, `${c.name}: the detail starts with its field`)
  }
})

t.test('errors[].path is a JSON Pointer: a field or parameter named with / or ~ is escaped (RFC 6901)', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const body = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'x', 'a/b': 1, 'c~d': 2, '~1': 3 } })
  t.equal(body.status, 400)
  t.same(
    (body.json.errors as { path: string }[]).map((e) => e.path).sort(),
    ['/a~1b', '/c~0d', '/~01'],
    'each unknown field at a pointer that names it',
  )
  t.match(body.json.detail, /^body\/(a~1b|c~0d|~01) /, 'the detail names it so too')

  const query = await call(t, app, { url: '/v1/beta/programs?a%2Fb=1', key })
  t.same(query.json.errors.map((e: { in: string; path: string }) => [e.in, e.path]), [['query', '/a~1b']])
  const undecodable = await call(t, app, { url: '/v1/changelog?a%2Fb~c=%ZZ', key })
  t.same(undecodable.json.errors.map((e: { in: string; path: string }) => [e.in, e.path]), [['query', '/a~1b~0c']], 'a value that does not decode, under its escaped name')
})

t.test('errors[].path stays within its documented 1024 characters for a long field name, escaped or not', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const name of ['n'.repeat(1100), '/'.repeat(600)]) {
    const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'x', [name]: 1 } })
    t.equal(res.status, 400)
    t.ok(res.json.errors[0].path.length <= 1024, `${res.json.errors[0].path.length} characters`)
  }
})
