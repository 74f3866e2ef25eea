// Adversarial requests generated from the spec. Every operation in generated/routes.ts gets valid
// requests built from its own request schemas, and invalid ones of every kind a careless client or
// an attacker sends: wrong types, out-of-bound strings and numbers, missing and unknown fields,
// odd Unicode, huge and deeply nested bodies, malformed JSON, bad ids of every shape, bad query
// values, wrong media types and bad credentials. Whatever arrives, the answer is documented in
// openapi.yaml and never a 5xx; every error is problem+json with its status and a known code;
// every success matches its response schema. A new operation in the spec is fuzzed without
// touching this file: ids are created through the POST of the collection the id belongs to.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import fc from 'fast-check'
import type { FastifyInstance, InjectOptions } from 'fastify'
import t from 'tap'
import { routes, type RouteSpec } from '../../generated/routes.js'
import { isDateTime } from '../../src/http/validation.js'
import { ADMIN_TOKEN, createProject, testApp } from '../helpers/app.js'
import { spec, specProblems } from '../helpers/spec-check.js'

type Schema = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

/** Changing it changes every generated case; a failure report quotes it with the run's path. */
const SEED = 20261122
/**
 * Runs per operation and kind of request: 65 to 210 requests an operation, by what it takes. Kinds are
 * separate properties so that one bug does not hide the others of its operation.
 */
const RUNS = { valid: 45, body: 40, unicode: 30, raw: 20, size: 10, query: 20, path: 25, longId: 4, auth: 8, mediaType: 6 }
const BODY_LIMIT = 1024 * 1024

const PROBLEM_CODES: string[] = spec.components.schemas.Problem.properties.code.enum
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
// What must never reach a client, whatever it sent: stack frames, driver and SQL messages.
const LEAK = /node_modules|\.[cm]?[jt]s:\d+|\n\s+at |violates .* constraint|duplicate key value|invalid byte sequence|syntax error at or near|PostgresError|DrizzleQueryError|Failed query|ECONNREFUSED/

// The oracle: an AJV of our own, with the formats of the spec check (and no coercion), says
// whether a generated value is valid. Invalid ones must be refused; valid ones may still meet a rule the
// schema cannot express (a translation needs a title), but never a 5xx.
const ajv = new Ajv2020({ strict: false, allErrors: false, logger: false })
formats.default(ajv, { mode: 'full', formats: ['uri', 'email'] })
ajv.addFormat('date-time', { type: 'string', validate: isDateTime })
const compiled = new WeakMap<object, ValidateFunction>()
function validatorFor(schema: Schema): ValidateFunction {
  let validate = compiled.get(schema)
  if (!validate) compiled.set(schema, (validate = ajv.compile(schema)))
  return validate
}
const isValid = (schema: Schema, value: unknown): boolean => validatorFor(schema)(value) as boolean
/** What the server receives: JSON has no undefined, NaN or -0. */
const roundTrip = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)))

// ---------------------------------------------------------------------------------------------
// Schema → arbitrary
// ---------------------------------------------------------------------------------------------

const chars = (s: string) => fc.constantFrom(...Array.from(s))
const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const word = (alphabet: string, min: number, max: number) => fc.string({ unit: chars(alphabet), minLength: min, maxLength: max })
const whitespace = fc.string({ unit: fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u2003', '\u3000', '\ufeff'), maxLength: 3 })
/** Any UTF-16 code unit, lone surrogates included. */
const utf16 = (maxLength: number) => fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength })

const numericIdentifier = word('0123456789', 1, 9).map((s) => s.replace(/^0+(?=\d)/, ''))
const alphanumericIdentifier = fc
  .tuple(word(`${ALNUM}-`, 0, 5), fc.constantFrom('alpha', 'beta', 'rc', '-', 'x', 'Z'), word(`${ALNUM}-`, 0, 5))
  .map((parts) => parts.join(''))
const semver = fc
  .tuple(
    numericIdentifier,
    numericIdentifier,
    numericIdentifier,
    fc.option(fc.array(fc.oneof(numericIdentifier, alphanumericIdentifier), { minLength: 1, maxLength: 3 }), { nil: undefined }),
    fc.option(fc.array(word(`${ALNUM}-`, 1, 8), { minLength: 1, maxLength: 3 }), { nil: undefined }),
  )
  .map(([a, b, c, pre, build]) => `${a}.${b}.${c}${pre ? `-${pre.join('.')}` : ''}${build ? `+${build.join('.')}` : ''}`)

const locale = fc.oneof(
  fc.constantFrom('en', 'pt-BR', 'zh-Hant', 'sr-Latn-RS', 'de-CH-1996', 'es-419', 'EN', 'pt-br', 'ZH-hant-tw', 'fil', 'sl-rozaj-biske'),
  fc
    .tuple(
      word(LETTERS, 2, 3),
      fc.option(word(LETTERS, 4, 4), { nil: undefined }),
      fc.option(fc.oneof(word(LETTERS, 2, 2), word('0123456789', 3, 3)), { nil: undefined }),
      fc.array(fc.oneof(word(ALNUM, 5, 8), fc.tuple(word('0123456789', 1, 1), word(ALNUM, 3, 3)).map(([d, r]) => d + r)), { maxLength: 2 }),
    )
    .map(([language, script, region, variants]) => [language, script, region, ...variants].filter((p) => p !== undefined).join('-')),
)

const emailLocalChar = fc.oneof(chars(`${ALNUM}._%+-!#$&'*/=?^\`{|}~`), fc.constantFrom('é', 'ü', 'ß', 'İ', '中', '😀'))
const emailLabel = fc.string({ unit: fc.oneof({ weight: 9, arbitrary: chars(`${ALNUM}-`) }, fc.constantFrom('ä', 'ñ')), minLength: 1, maxLength: 12 })
const email = fc.oneof(
  fc
    .tuple(whitespace, fc.string({ unit: emailLocalChar, minLength: 1, maxLength: 20 }), fc.array(emailLabel, { minLength: 2, maxLength: 4 }), whitespace)
    .map(([before, local, labels, after]) => `${before}${local}@${labels.join('.')}${after}`),
  fc.emailAddress(),
  fc.constant(`${'a'.repeat(254 - '@example.com'.length)}@example.com`),
)

const httpUrl = fc
  .tuple(fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }), fc.boolean())
  .map(([url, shout]) => (shout ? url.replace(/^https?/, (s) => s.toUpperCase()) : url))

const ZONES = ['Z', 'z', '+00:00', '+05:30', '-08:00', '+14:00', '-12:00', '-00:00']
const zonedDateTime = fc
  .tuple(
    fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2199-12-31T23:59:59Z'), noInvalidDate: true }),
    fc.constantFrom(...ZONES),
    fc.constantFrom('', '.1', '.123', '.123456', '.123456789'),
  )
  .map(([date, zone, fraction]) => {
    const offset = zone.length === 6 ? (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4))) : 0
    return `${new Date(date.getTime() + offset * 60_000).toISOString().slice(0, 19)}${fraction}${zone}`
  })
const dateTime = fc.oneof(
  { weight: 8, arbitrary: zonedDateTime },
  // Edges of what a timestamp column and a JavaScript Date hold.
  fc.constantFrom(
    '0001-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999999999-12:00',
    '1969-12-31T23:59:59.999Z', '2024-02-29T12:00:00+14:00', '2100-02-28T23:59:59-00:00', '1900-01-01T00:00:00+05:30',
  ),
)

/** A pattern whose meaning we know gets a sampler of values a person would send. */
interface Sampler {
  accepts: string[]
  rejects: string[]
  arbitrary: (schema: Schema, pattern: RegExp) => fc.Arbitrary<string>
}

const SAMPLERS: Sampler[] = [
  { accepts: ['1.2.3', '0.0.0-rc.1+build.5', '10.20.30-alpha'], rejects: ['1.2', 'v1.2.3', '01.2.3', '1.2.3-01'], arbitrary: () => semver },
  { accepts: ['en', 'pt-BR', 'zh-Hant', 'es-419', 'de-CH-1996'], rejects: ['english', 'en_US', 'e', 'en-'], arbitrary: () => locale },
  { accepts: ['a@b.co', ' Ada@Example.com '], rejects: ['a@b', 'ab.co', 'a@@b.co', 'a b@c.de'], arbitrary: () => email },
  { accepts: ['http://a.example', 'HTTPS://x.y/z'], rejects: ['ftp://x.y', 'x.y'], arbitrary: () => httpUrl },
  {
    // Text that is not blank, up to some length after trimming: names, titles, labels.
    accepts: ['a', ' a ', 'a b'],
    rejects: ['', ' ', '\t\n'],
    arbitrary: (schema, pattern) => {
      const longest = longestAccepted(pattern, schema.maxLength ?? 100_000)
      const core = fc.oneof(
        { weight: 6, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: Math.min(longest, 30) }) },
        { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: Math.min(longest, 20) }) },
        { weight: 1, arbitrary: fc.constantFrom('x', 'é', '🚀', '中', 'İ').map((c) => c.repeat(longest)) },
      )
      return fc.tuple(whitespace, core, whitespace).map(([a, b, c]) => a + b + c)
    },
  },
]

/** The longest run of `x` a pattern accepts, found by bisection (patterns here are monotone). */
function longestAccepted(pattern: RegExp, cap: number): number {
  let low = 1
  let high = cap
  if (pattern.test('x'.repeat(high))) return high
  while (low + 1 < high) {
    const middle = Math.floor((low + high) / 2)
    if (pattern.test('x'.repeat(middle))) low = middle
    else high = middle
  }
  return low
}

function samplerFor(pattern: RegExp): Sampler | undefined {
  return SAMPLERS.find((s) => s.accepts.every((v) => pattern.test(v)) && s.rejects.every((v) => !pattern.test(v)))
}

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0
  const max = schema.maxLength ?? 10_000
  // A timestamp's pattern only restates part of its format (the year's first digit): values
  // drawn from the pattern would almost never be timestamps.
  if (schema.format === 'date-time') return dateTime
  if (typeof schema.pattern === 'string') {
    const pattern = new RegExp(schema.pattern, 'u')
    const sampler = samplerFor(pattern)
    if (sampler) return sampler.arbitrary(schema, pattern)
    try {
      return fc.stringMatching(new RegExp(schema.pattern))
    } catch {
      return fc.string({ unit: 'binary', minLength: min, maxLength: Math.min(max, 40) }).filter((s) => pattern.test(s))
    }
  }
  if (schema.format === 'uri') return fc.webUrl({ withQueryParameters: true, withFragments: true })
  return fc.oneof(
    { weight: 6, arbitrary: fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 40) }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength: Math.min(max, 40) }) },
    // The bounds themselves, in characters that take one, two or four bytes.
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(min, max), fc.constantFrom('x', 'é', '🚀', '\n')).map(([n, c]) => c.repeat(n)) },
  )
}

/** Values valid against `schema`; `minimal` leaves optional properties out (for fixtures). */
function arbitraryFor(schema: Schema, minimal = false): fc.Arbitrary<unknown> {
  return rawArbitrary(schema, minimal).filter((value) => isValid(schema, roundTrip(value)))
}

function rawArbitrary(schema: Schema, minimal: boolean): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]))
  if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) {
    const { oneOf, anyOf, ...rest } = schema
    return fc.oneof(...((oneOf ?? anyOf) as Schema[]).map((branch) => arbitraryFor({ ...rest, ...branch }, minimal)))
  }
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : schema.properties ? ['object'] : ['string']
  if (types.length > 1) return fc.oneof(...types.map((type) => arbitraryFor({ ...schema, type }, minimal)))
  switch (types[0]) {
    case 'null':
      return fc.constant(null)
    case 'boolean':
      return fc.boolean()
    case 'integer': {
      const min = schema.minimum ?? -(2 ** 31)
      const max = schema.maximum ?? 2 ** 31 - 1
      return fc.oneof(fc.constantFrom(min, max), fc.integer({ min, max }))
    }
    case 'number': {
      const min = schema.minimum ?? -1e9
      const max = schema.maximum ?? 1e9
      return fc.oneof(fc.constantFrom(min, max), fc.double({ min, max, noNaN: true, noDefaultInfinity: true }))
    }
    case 'string':
      return stringArbitrary(schema)
    case 'array':
      return fc.array(arbitraryFor(schema.items ?? {}, minimal), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 12) })
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>
      const required = (schema.required ?? []) as string[]
      const names = minimal ? required : Object.keys(properties)
      const model = Object.fromEntries(names.map((name) => [name, arbitraryFor(properties[name] ?? {}, minimal)]))
      const dependent = Object.entries((schema.dependentRequired ?? {}) as Record<string, string[]>)
      return fc.record(model, { requiredKeys: required.filter((name) => names.includes(name)), noNullPrototype: true }).map((value) => {
        const object: Record<string, unknown> = { ...value }
        for (const [name, needs] of dependent) if (name in object && needs.some((n) => !(n in object))) delete object[name]
        return object
      })
    }
    default:
      return fc.anything()
  }
}

// ---------------------------------------------------------------------------------------------
// Invalid values
// ---------------------------------------------------------------------------------------------

const ODD_UNICODE = [
  '\ud800', '\udfff', '\ud83d', '\udc00\ud800', '\u0000', '\u202e', '\u200f', '\u200e', '\u2066', '\u200b', '\u200d', '\ufeff',
  '\uffff', '\ufffe', '\u0301', '🚀', '👩‍👩‍👧‍👦', '🇫🇷', 'İ', 'ß', 'ﬁ', 'Ω', '\u0085', '\u2028', '\u2029', '\r\n', '\t', '\x7f',
  '\x1b[31m', 'ǅ', '𝔘𝔫𝔦', '\udb40\udc01', '\u034f', 'ᴀ', 'Ⅻ', '¹', '\u180e', '%00', '\\u0000', '<script>', "'; --",
]
const oddPiece = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ODD_UNICODE) }, utf16(8), fc.string({ unit: 'binary', maxLength: 8 }))

const WRONG_VALUES: unknown[] = [0, -1, 1.5, 1e300, -0, true, false, null, '', 'x', [], ['x'], [null], {}, { a: 1 }, { $gt: '' }, [[[]]], '0', 'true', 'null']
const wrongValue = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...WRONG_VALUES) }, fc.anything({ maxDepth: 2, maxKeys: 3 }))

const BAD_DATES = [
  '2026-13-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-01-01', '2026-01-01T00:00:00', '2026-01-01 00:00:00Z', 'yesterday', 'now',
  '2026-01-01T24:00:00Z', '2026-01-01T23:59:60Z', '+275760-09-13T00:00:00.000Z', '2026-01-01T00:00:00+25:00', '2026-01-01T00:00:00.Z',
  '1e12', '2026-W01', '２０２６-01-01T00:00:00Z', '2026-01-01T00:00:00Z\u0000',
]
const BAD_URIS = ['not a uri', 'http://', 'javascript:alert(1)', 'http://exa mple.com', 'http://[::1', '//x.example', 'ftp://x.example', 'mailto:a@b.co', 'http:/x', 'data:text/html,hi']

/** Values breaking the property's own constraints (the oracle has the final word). */
function outOfBounds(schema: Schema): fc.Arbitrary<unknown> | undefined {
  const options: fc.Arbitrary<unknown>[] = []
  if (Array.isArray(schema.oneOf)) {
    const branches = (schema.oneOf as Schema[]).map(outOfBounds).filter((a): a is fc.Arbitrary<unknown> => a !== undefined)
    return branches.length ? fc.oneof(...branches) : undefined
  }
  const longer = (n: number) => fc.tuple(fc.integer({ min: 1, max: 3 }), fc.constantFrom('x', 'é', '🚀', ' ', '\u0301')).map(([extra, c]) => c.repeat(n + extra))
  if (typeof schema.maxLength === 'number') options.push(longer(schema.maxLength))
  if (typeof schema.minLength === 'number' && schema.minLength > 0) options.push(fc.constant('x'.repeat(schema.minLength - 1)))
  if (typeof schema.pattern === 'string') {
    const pattern = new RegExp(schema.pattern, 'u')
    const sampler = samplerFor(pattern)
    if (sampler) options.push(fc.constantFrom(...sampler.rejects))
    options.push(fc.constantFrom('', ' ', 'x'.repeat(300), '\u0000', '\n', 'v1.2.3', '1.2', 'en_US', 'no-at-sign', 'ftp://x'))
    options.push(fc.string({ unit: 'binary', maxLength: 20 }).filter((s) => !pattern.test(s)))
  }
  if (Array.isArray(schema.enum)) {
    const values = (schema.enum as unknown[]).filter((v): v is string => typeof v === 'string')
    if (values.length) {
      options.push(
        fc.tuple(fc.constantFrom(...values), fc.constantFrom<(s: string) => string>(
          (s) => s.toUpperCase(), (s) => s[0]!.toUpperCase() + s.slice(1), (s) => `${s} `, (s) => ` ${s}`, (s) => `${s}\u0000`, (s) => `${s}s`, (s) => s.slice(1),
        )).map(([v, f]) => f(v)),
      )
    }
    options.push(fc.string({ maxLength: 12 }))
  }
  if (schema.type === 'integer' || schema.type === 'number') {
    if (typeof schema.minimum === 'number') options.push(fc.constantFrom(schema.minimum - 1, schema.minimum - 0.5, -1e300))
    if (typeof schema.maximum === 'number') options.push(fc.constantFrom(schema.maximum + 1, schema.maximum + 0.5, 1e300))
    if (schema.type === 'integer') options.push(fc.constantFrom(1.5, 2 ** 53 + 2, -(2 ** 63), 0.1))
  }
  if (schema.format === 'date-time') options.push(fc.constantFrom(...BAD_DATES))
  if (schema.format === 'uri') options.push(fc.constantFrom(...BAD_URIS))
  if (schema.type === 'array' || schema.items) {
    const item = arbitraryFor(schema.items ?? {})
    if (typeof schema.maxItems === 'number') options.push(fc.array(item, { minLength: schema.maxItems + 1, maxLength: schema.maxItems + 3 }))
    const badItem = outOfBounds(schema.items ?? {})
    if (badItem) options.push(fc.tuple(fc.array(item, { maxLength: 3 }), badItem).map(([items, bad]) => [...items, bad]))
  }
  return options.length ? fc.oneof(...options) : undefined
}

/** Odd Unicode inside a valid string (or inside each item of an array); anything else becomes it. */
function withOddUnicode(value: unknown, pieces: string[], position: number): unknown {
  if (typeof value === 'string') {
    const at = Math.min(position, value.length)
    return value.slice(0, at) + pieces.join('') + value.slice(at)
  }
  if (Array.isArray(value)) return value.length ? value.map((v) => withOddUnicode(v, pieces, position)) : [pieces.join('')]
  return pieces.join('')
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/** A body as generated: kept small to print, expanded when sent. */
type BodyCase =
  | { as: 'json'; value: unknown }
  | { as: 'form'; value: unknown }
  | { as: 'text'; text: string }
  | { as: 'bytes'; before: string; bytes: readonly number[]; after: string }
  | { as: 'filler'; base: Record<string, unknown>; key: string; bytes: number; unit: string }
  | { as: 'nested'; base: Record<string, unknown>; key: string | null; depth: number; open: '[' | '{"a":' }

interface Expect {
  statuses?: number[]
  codes?: string[]
}

interface Case {
  kind: keyof typeof RUNS
  what: string
  params?: Record<string, string>
  query: string
  body?: BodyCase
  headers: Record<string, string>
  expect: Expect
}

const VALIDATION = { statuses: [400], codes: ['validation_failed', 'invalid_json'] }

function expandBody(body: BodyCase): string | Buffer {
  switch (body.as) {
    case 'json':
      return JSON.stringify(body.value)
    case 'form': {
      // What a browser sends for the fields; a value that is not a string goes as its JSON text.
      const fields = body.value && typeof body.value === 'object' ? Object.entries(body.value as Record<string, unknown>) : [['value', body.value]]
      return new URLSearchParams(fields.map(([k, v]): [string, string] => [String(k), typeof v === 'string' ? v : (JSON.stringify(v) ?? '')])).toString()
    }
    case 'text':
      return body.text
    case 'bytes':
      return Buffer.concat([Buffer.from(body.before), Buffer.from(body.bytes), Buffer.from(body.after)])
    case 'filler': {
      const head = JSON.stringify(body.base).slice(0, -1)
      const start = `${head}${head.length > 1 ? ',' : ''}${JSON.stringify(body.key)}:"`
      const room = Math.max(0, body.bytes - Buffer.byteLength(start) - 2)
      const unit = JSON.stringify(body.unit).slice(1, -1)
      const unitBytes = Buffer.byteLength(unit)
      return `${start}${unit.repeat(Math.floor(room / unitBytes))}${'x'.repeat(room % unitBytes)}"}`
    }
    case 'nested': {
      const close = body.open === '[' ? ']' : '}'
      const nest = body.open.repeat(body.depth) + (body.open === '[' ? '' : '1') + close.repeat(body.depth)
      if (body.key === null) return nest
      const head = JSON.stringify(body.base).slice(0, -1)
      return `${head}${head.length > 1 ? ',' : ''}${JSON.stringify(body.key)}:${nest}}`
    }
  }
}

/** What the server must answer to a body, judged by the oracle on exactly what is sent. */
function expectForBody(schema: Schema, payload: string | Buffer, optional: boolean): Expect {
  if (Buffer.byteLength(payload) > BODY_LIMIT) return { statuses: [413], codes: ['payload_too_large'] }
  if (typeof payload !== 'string') return {}
  // An empty body is no body (src/http/json-parser.ts): fine where the body is optional.
  if (optional && payload.trim() === '') return {}
  let value: unknown
  try {
    // RFC 8259 lets a parser ignore a byte order mark.
    value = JSON.parse(payload.replace(/^\ufeff/, ''))
  } catch {
    return VALIDATION
  }
  // Prototype poisoning is refused whatever else the body holds.
  if (/"__proto__"\s*:/.test(payload) || (/"constructor"\s*:/.test(payload) && /"prototype"\s*:/.test(payload))) return VALIDATION
  return isValid(schema, value) ? {} : VALIDATION
}

interface Fixture {
  /** Real ids for each path parameter. */
  params: Record<string, string>
  /** Whether every id came from a create operation (so valid requests can reach the handler). */
  real: boolean
}

interface Context {
  app: FastifyInstance
  key: string
  sequence: number
}

const credentials = (route: RouteSpec, key: string): Record<string, string> =>
  route.security === 'ApiKey' ? { authorization: `Bearer ${key}` } : route.security === 'AdminToken' ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {}

const fill = (template: string, params: Record<string, string>) => template.replace(/\{([^}]+)\}/g, (_, name: string) => params[name] ?? `{${name}}`)
const paramNames = (template: string) => [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)

/** Creates what each id of `template` names, through the POST of its collection. */
async function createFixture(ctx: Context, template: string): Promise<Fixture> {
  const segments = template.split('/')
  const params: Record<string, string> = {}
  let real = true
  for (let i = 0; i < segments.length; i++) {
    const name = /^\{(.+)\}$/.exec(segments[i]!)?.[1]
    if (!name) continue
    const collection = segments.slice(0, i).join('/')
    const create = routes.find((r) => r.method === 'POST' && r.path === collection)
    if (!create) {
      real = false
      params[name] = `xx_${'A'.repeat(21)}`
      continue
    }
    params[name] = await createIn(ctx, create, params)
  }
  return { params, real }
}

async function createIn(ctx: Context, create: RouteSpec, params: Record<string, string>): Promise<string> {
  const url = fill(create.path, params)
  let last = ''
  for (let attempt = 0; attempt < 20; attempt++) {
    const body = create.schema.body ? fc.sample(arbitraryFor(create.schema.body, true), { seed: SEED + ctx.sequence++, numRuns: 1 })[0] : undefined
    const res = await ctx.app.inject({
      method: 'POST',
      url,
      headers: { ...credentials(create, ctx.key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      payload: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.statusCode >= 200 && res.statusCode < 300) return (JSON.parse(res.body) as { data: { id: string } }).data.id
    last = `${res.statusCode} ${res.body}`
    if (res.statusCode === 409 && (JSON.parse(res.body) as { code?: string }).code === 'limit_exceeded') await makeRoom(ctx, create, url)
  }
  throw new Error(`${create.operationId} refused 20 valid minimal bodies at ${url}; last: ${last}`)
}

/**
 * A collection at its limit (a project's 10 webhook endpoints, which valid creates fill): its
 * oldest member is deleted, through the API, so that the next create has room. The fixtures in
 * use are newer.
 */
async function makeRoom(ctx: Context, create: RouteSpec, url: string): Promise<void> {
  const headers = credentials(create, ctx.key)
  const page = await ctx.app.inject({ method: 'GET', url: `${url}?limit=100`, headers })
  const oldest = (JSON.parse(page.body) as { data?: { id: string }[] }).data?.at(-1)
  if (!oldest) throw new Error(`${create.operationId} is at its limit and ${url} lists nothing to delete: ${page.statusCode} ${page.body}`)
  await ctx.app.inject({ method: 'DELETE', url: `${url}/${oldest.id}`, headers })
}

function encode(value: unknown): string {
  const text = String(value)
  try {
    return encodeURIComponent(text)
  } catch {
    return encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '\ufffd'))
  }
}

const serializeQuery = (query: Record<string, unknown>) =>
  Object.entries(query)
    .map(([name, value]) => `${encode(name)}=${encode(value)}`)
    .join('&')

// ---------------------------------------------------------------------------------------------
// Cases per operation
// ---------------------------------------------------------------------------------------------

const isInteger = (s: Schema) => s.type === 'integer'
const BAD_INTEGERS = [
  '2.5', '1e2', '1e309', '0x1A', 'abc', '', 'NaN', 'Infinity', '-Infinity', '١', '１', '9'.repeat(17), '9'.repeat(400), 'null', 'true',
  '%5B1%5D', '%ZZ', '%00', '1%00', '-', '--1', '1-', '%E0%A4%A', '1.0e0', '.5', '5.',
]
const UNKNOWN_QUERY_NAMES = ['foo', 'q', 'page', 'sort', 'Limit', 'LIMIT', 'Offset', 'Status', 'Locale', 'limit[]', 'limit[0]', 'status%20', '__proto__', 'constructor', 'hasOwnProperty', 'toString', '%ZZ', '%E2%80%AE', 'a%00b', 'x'.repeat(300)]

/** Escapes that decode to no UTF-8. */
const UNDECODABLE_QUERY = ['%ZZ', '%E0%A4%A', '%ED%A0%80']
/** Links from elsewhere carry parameters of their own: the operations that ignore them. */
const ignoresUnknownQuery = (route: RouteSpec) => route.schema.querystring.additionalProperties !== false
const TRACKING = ['utm_source=newsletter', 'fbclid=IwAR0x', 'utm_campaign=launch&utm_medium=email', 'ref=x', 'limit[]=1', 'utm_campaign=caf%E9', '%ZZ=1']

/** Bad queries for the route; undefined for one that defines no parameter and ignores the rest. */
function queryCases(route: RouteSpec, validQuery: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<string> | undefined {
  const properties = (route.schema.querystring.properties ?? {}) as Record<string, Schema>
  const names = Object.keys(properties)
  // Each bad parameter: the name it replaces in a valid query, and the text sent for it.
  // An unknown parameter: refused, unless the operation ignores those (the portal's pages and feeds).
  const bad: fc.Arbitrary<[string, string]>[] = ignoresUnknownQuery(route)
    ? []
    : [
        fc
          .tuple(fc.oneof(fc.constantFrom(...UNKNOWN_QUERY_NAMES), word(`${LETTERS}_`, 1, 12)), fc.constantFrom('x', '1', ''))
          .filter(([n]) => !names.includes(n))
          .map(([n, v]) => [n, `${n}=${v}`] as [string, string]),
      ]
  for (const name of names) {
    const schema = properties[name]!
    if (isInteger(schema)) {
      const min = schema.minimum ?? -(2 ** 53)
      const max = schema.maximum ?? 2 ** 53
      const beyond = [min - 1, max + 1, max + 1000, min - 1000].filter((n) => n < min || n > max).map(String)
      bad.push(fc.constantFrom(...beyond, ...BAD_INTEGERS).map((v) => [name, `${name}=${v}`] as [string, string]))
    } else {
      const outside = outOfBounds(schema) ?? fc.constant(123)
      bad.push(
        outside
          .filter((v) => typeof v === 'string' && !isValid(schema, v) && !/[\ud800-\udfff]/.test(v))
          .map((v) => [name, `${name}=${encode(v)}`] as [string, string]),
      )
      bad.push(fc.constantFrom(...UNDECODABLE_QUERY, '%00').map((v) => [name, `${name}=${v}`] as [string, string]))
    }
    // A repeated parameter arrives as an array.
    bad.push(fc.tuple(arbitraryFor(schema), arbitraryFor(schema)).map(([a, b]) => [name, `${name}=${encode(a)}&${name}=${encode(b)}`] as [string, string]))
    // Present without a value, with or without `=`.
    if (!isValid(schema, '')) bad.push(fc.constantFrom(name, `${name}=`).map((text) => [name, text] as [string, string]))
  }
  if (!bad.length) return undefined
  return fc.tuple(validQuery, fc.oneof(...bad)).map(([query, [name, text]]) => {
    const head = serializeQuery(omit(query, name))
    return `${head}${head ? '&' : ''}${text}`
  })
}

const PREFIXES = ['prj', 'bp', 'bt', 'ch', 'key', 'fb', 'eu', 'xx', 'BP', 'Bp']
// Ids the server cannot even decode; any 4xx problem will do for those.
const UNDECODABLE = ['%', '%ZZ', '%E0%A4%A', '%ED%A0%80', '%FF', '%C0%AF', '%F4%90%80%80', 'bp_%']

function badIds(fixture: Fixture, name: string, others: string[], long: boolean): fc.Arbitrary<{ id: string; decodable: boolean }> {
  const real = fixture.params[name]!
  const prefix = real.split('_')[0]!
  const suffix = real.slice(prefix.length + 1)
  const alnum = (n: number) => word(ALNUM, n, n)
  if (long) return fc.integer({ min: 190, max: 5000 }).map((n) => ({ id: `${prefix}_${'A'.repeat(n)}`, decodable: true }))
  const decodable = fc.oneof(
    alnum(21).map((s) => `${prefix}_${s}`),
    fc.tuple(fc.constantFrom(...PREFIXES.filter((p) => p !== prefix)), alnum(21)).map(([p, s]) => `${p}_${s}`),
    fc.integer({ min: 0, max: 60 }).filter((n) => n !== 21).chain((n) => alnum(n)).map((s) => `${prefix}_${s}`),
    fc.constantFrom(
      ...others.filter((o) => !o.startsWith(`${prefix}_`)),
      `${prefix.toUpperCase()}_${suffix}`, `${real}x`, real.slice(0, -1), `${real.slice(0, -1)}%C3%A9`, `%20${real}`, `${real}%20`, `${real}%00`,
      `${real}%0A`, `${real}%E2%80%AE`, `%E2%80%8F${real}`, `${real}%2F..`, `..%2F${real}`, `${prefix}-${suffix}`, `${prefix}%2D${suffix}`,
      `${prefix}_${suffix.toLowerCase()}`, `${prefix}__${suffix}`, `${prefix}_${suffix}${suffix}`,
      '1%27%20OR%20%271%27%3D%271', '1%3BDROP%20TABLE%20x', 'null', 'undefined', '0', '-1', '1e309', 'NaN', '%5B%5D', '%7B%7D', 'true',
      `${prefix}_`, '_', '%2A', '%24%7Bid%7D', '%F0%9F%98%80', '%00', `${prefix}_%00%00%00%00%00%00%00%00%00%00%00%00%00%00%00%00%00%00%00%00%00`,
      `${prefix}_${'%C3%A9'.repeat(21)}`, `${prefix}_${'%D9%A1'.repeat(21)}`, 'x'.repeat(200),
    ),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }).map(encode),
    fc.string({ unit: 'grapheme', minLength: 21, maxLength: 21 }).map((s) => `${prefix}_${encode(s)}`),
  )
  return fc.oneof(
    { weight: 9, arbitrary: decodable.filter((id) => id !== '' && decodeURIComponent(id) !== real).map((id) => ({ id, decodable: true })) },
    { weight: 1, arbitrary: fc.constantFrom(...UNDECODABLE).map((id) => ({ id, decodable: false })) },
  )
}

const BAD_CREDENTIALS = [
  undefined, '', 'Bearer', 'Bearer ', 'Bearer fbk_', 'Bearer fbk_' + 'A'.repeat(40), 'Bearer fbk_' + 'A'.repeat(400), 'Basic dXNlcjpwYXNz',
  'Token abc', 'Bearer null', 'Bearer undefined', 'Bearer ' + ADMIN_TOKEN.slice(0, -1), 'Bearer  ', 'Bearer key_AAAAAAAAAAAAAAAAAAAAA',
]

const CONTENT_TYPES = ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream', 'image/png', 'application/jsonp', 'json']
const FORM_TYPE = 'application/x-www-form-urlencoded'
/** Operations whose body is an HTML form (the portal's); every other body is JSON. */
const FORM_OPERATIONS = new Set(
  routes.filter((r) => spec.paths[r.path]?.[r.method.toLowerCase()]?.requestBody?.content?.[FORM_TYPE]).map((r) => r.operationId),
)

interface Plan {
  kind: keyof typeof RUNS
  arbitrary: fc.Arbitrary<Case>
}

function plansFor(route: RouteSpec, fixture: Fixture, others: string[], key: string): Plan[] {
  const auth = credentials(route, key)
  const bodySchema = route.schema.body
  const hasBody = bodySchema !== undefined
  const validQuery = arbitraryFor(route.schema.querystring) as fc.Arbitrary<Record<string, unknown>>
  const validBody = hasBody ? (arbitraryFor(bodySchema) as fc.Arbitrary<Record<string, unknown>>) : fc.constant(undefined)
  const isForm = FORM_OPERATIONS.has(route.operationId)
  const jsonHeaders = hasBody ? { ...auth, 'content-type': isForm ? FORM_TYPE : 'application/json' } : auth
  const jsonBody = (value: unknown): BodyCase | undefined => (hasBody ? { as: isForm ? 'form' : 'json', value } : undefined)
  const requestId = fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    fc.stringMatching(REQUEST_ID),
    fc.constantFrom('', ' ', 'x'.repeat(129), 'a b', 'a/b', 'é', '<script>', '../../etc/passwd'),
  )
  // A valid query, and on an operation that ignores unknown parameters, one of a link's own, sometimes.
  const tracking = ignoresUnknownQuery(route) ? fc.option(fc.constantFrom(...TRACKING)) : fc.constant(null)
  const plans: Plan[] = [
    {
      kind: 'valid',
      arbitrary: fc.tuple(validQuery, validBody, requestId, tracking).map(([query, body, id, extra]) => ({
        kind: 'valid',
        what: 'a valid request',
        query: [serializeQuery(query), extra].filter(Boolean).join('&'),
        body: jsonBody(body),
        headers: id === undefined ? jsonHeaders : { ...jsonHeaders, 'x-request-id': id },
        expect: {},
      })),
    },
  ]
  const badQueries = queryCases(route, validQuery)
  if (badQueries) {
    plans.push({
      kind: 'query',
      arbitrary: fc.tuple(badQueries, validBody).map(([query, body]) => ({
        kind: 'query', what: 'a bad query', query, body: jsonBody(body), headers: jsonHeaders, expect: { statuses: [400], codes: ['validation_failed'] },
      })),
    })
  }
  const names = paramNames(route.path)
  for (const kind of names.length ? (['path', 'longId'] as const) : []) {
    plans.push({
      kind,
      arbitrary: fc.tuple(fc.constantFrom(...names).chain((name) => fc.tuple(fc.constant(name), badIds(fixture, name, others, kind === 'longId'))), validQuery, validBody).map(
        ([[name, bad], query, body]) => ({
          kind,
          what: `a bad ${name}`,
          params: { ...fixture.params, [name]: bad.id },
          query: serializeQuery(query),
          body: jsonBody(body),
          headers: jsonHeaders,
          // 400 before 404: with a body, a rule the schema cannot express may answer first; a
          // list's cursor names the list it belongs to, so under a bad parent id it is no cursor
          // of that list, a 400 whatever else holds.
          expect:
            (query as Record<string, unknown>).cursor !== undefined
              ? { statuses: [400], codes: ['validation_failed'] }
              : bad.decodable
                ? hasBody ? { statuses: [400, 404], codes: ['validation_failed', 'not_found'] } : { statuses: [404], codes: ['not_found'] }
                : { statuses: [400, 404], codes: ['validation_failed', 'not_found'] },
        }),
      ),
    })
  }
  if (route.security !== 'none') {
    const wrong = route.security === 'ApiKey' ? ['Bearer ' + ADMIN_TOKEN, `Bearer ${key}x`, `Bearer ${key.slice(0, -1)}`, `Bearer ${key.slice(0, 4)}${key.slice(4).toUpperCase()}`, key, `Basic ${key}`] : [`Bearer ${key}`, `Bearer ${ADMIN_TOKEN}x`, `Bearer ${ADMIN_TOKEN.toUpperCase()}`]
    plans.push({
      kind: 'auth',
      arbitrary: fc.tuple(fc.constantFrom(...BAD_CREDENTIALS, ...wrong), validQuery, validBody).map(([authorization, query, body]) => ({
        kind: 'auth',
        what: 'bad credentials',
        query: serializeQuery(query),
        body: jsonBody(body),
        headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...(authorization === undefined ? {} : { authorization }) },
        expect: { statuses: [401], codes: ['unauthorized'] },
      })),
    })
  }
  if (hasBody) {
    plans.push({
      kind: 'mediaType',
      // A form operation refuses JSON as every other operation refuses a form.
      arbitrary: fc.tuple(fc.constantFrom(...CONTENT_TYPES.map((type) => (isForm && type === FORM_TYPE ? 'application/json' : type)), undefined), validBody).map(([type, body]) => ({
        kind: 'mediaType',
        what: isForm ? 'a body that is not declared a form' : 'a body that is not declared JSON',
        query: '',
        body: { as: 'json', value: body },
        headers: { ...auth, ...(type === undefined ? {} : { 'content-type': type }) },
        expect: type === undefined ? { statuses: [400, 415] } : { statuses: [415], codes: ['unsupported_media_type'] },
      })),
    })
    for (const [kind, bodies] of Object.entries(bodyCases(bodySchema, validBody as fc.Arbitrary<Record<string, unknown>>)) as [BodyKind, fc.Arbitrary<BodyCase>][]) {
      plans.push({ kind, arbitrary: bodies.map((body) => ({ kind, what: `an adversarial body (${kind})`, query: '', body, headers: jsonHeaders, expect: {} })) })
    }
  }
  return plans
}

type BodyKind = 'body' | 'unicode' | 'raw' | 'size'
const BODY_KINDS: string[] = ['body', 'unicode', 'raw', 'size'] satisfies BodyKind[]

function bodyCases(schema: Schema, valid: fc.Arbitrary<Record<string, unknown>>): Record<BodyKind, fc.Arbitrary<BodyCase>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>
  const names = Object.keys(properties)
  const required = (schema.required ?? []) as string[]
  const json = (value: unknown): BodyCase => ({ as: 'json', value })
  const anyName = names.length ? fc.constantFrom(...names) : fc.constant('name')
  const unknownName = fc
    .oneof(
      fc.constantFrom('id', 'slug', 'created_at', 'updated_at', 'token', 'project_id', 'published', 'data', 'prototype', 'toString', 'hasOwnProperty', '$where', 'a.b', '', ' ', '\u0000'),
      anyName.map((n) => n.toUpperCase()),
      anyName.map((n) => `${n} `),
      anyName.map((n) => `${n}\u200b`),
      utf16(12),
    )
    .filter((n) => !names.includes(n))
  const body: fc.Arbitrary<BodyCase>[] = [
    fc.tuple(valid, anyName, wrongValue).map(([body, name, value]) => json({ ...body, [name]: value })),
    fc.tuple(valid, unknownName, wrongValue).map(([body, name, value]) => json({ ...body, [name]: value })),
    fc.constantFrom<unknown>(null, [], 42, 'name', true, 0, '', [{}], [[]]).map(json),
  ]
  const unicode: fc.Arbitrary<BodyCase>[] = [
    fc.tuple(valid, anyName, fc.array(oddPiece, { minLength: 1, maxLength: 4 }), fc.nat(40)).map(([body, name, pieces, at]) => json({ ...body, [name]: withOddUnicode(body[name], pieces, at) })),
    fc.tuple(valid, utf16(30), utf16(30)).map(([body, k, v]) => json({ ...body, [k]: v })),
    fc.tuple(valid, anyName, fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0xfe, 0xff], [0x00], [0xef, 0xbb, 0xbf]))
      .map(([base, key, bytes]) => {
        // Bytes that are not UTF-8, inside a string.
        const text = JSON.stringify({ ...base, [key]: '\u0001' })
        const at = text.indexOf('\\u0001')
        return { as: 'bytes', before: text.slice(0, at), bytes, after: text.slice(at + 6) } as BodyCase
      }),
  ]
  const raw: fc.Arbitrary<BodyCase>[] = [
    fc.tuple(valid, fc.nat()).map(([body, cut]) => {
      const text = JSON.stringify(body)
      return { as: 'text', text: text.slice(0, cut % text.length) } as BodyCase
    }),
    fc.constantFrom(
      '{', '{"a":', '{"a":1,}', "{'a':1}", '{a:1}', 'undefined', 'NaN', '{"a":NaN}', '{"a":1}{"b":2}', '[1,2', '"abc', '{"a":"\\x41"}', '{"a":01}',
      '\u0000', '{"a":1e309}', '{"a":-1e309}', '\ufeff{}', '{"a":"\u0000"}', '{"a":"b"} x', '{"a":"\\uD800"}', '{"a":"\\uZZZZ"}', '{"a":.5}', '{"a":+1}',
      '{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', ' ', '', '\n\n',
    ).map((text) => ({ as: 'text', text }) as BodyCase),
    fc.tuple(valid, wrongValue).map(([body, value]) => {
      const text = JSON.stringify(body)
      return { as: 'text', text: `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"__proto__":${JSON.stringify(value ?? null)}}` } as BodyCase
    }),
    fc.tuple(valid, anyName, wrongValue).map(([body, name, value]) => {
      // A duplicate key: the last one wins in JSON.parse, and must be judged as such.
      const text = JSON.stringify(body)
      return { as: 'text', text: `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}${JSON.stringify(name)}:${JSON.stringify(value ?? null)}}` } as BodyCase
    }),
  ]
  const size: fc.Arbitrary<BodyCase>[] = [
    fc.tuple(valid, fc.oneof(anyName, fc.constant('zz')), fc.oneof(fc.integer({ min: 100_000, max: BODY_LIMIT - 1 }), fc.constantFrom(BODY_LIMIT, BODY_LIMIT + 1), fc.integer({ min: BODY_LIMIT + 1, max: 3 * BODY_LIMIT })), fc.constantFrom('x', 'é', '🚀', '\u0000', '"', '\ud800'))
      .map(([base, key, bytes, unit]) => ({ as: 'filler', base: omit(base, key), key, bytes, unit }) as BodyCase),
    fc.tuple(valid, fc.option(anyName, { nil: null }), fc.oneof(fc.integer({ min: 2, max: 200 }), fc.integer({ min: 1_000, max: 120_000 })), fc.constantFrom<'[' | '{"a":'>('[', '{"a":'))
      .map(([base, key, depth, open]) => ({ as: 'nested', base: key === null ? {} : omit(base, key), key, depth, open }) as BodyCase),
  ]
  if (required.length) body.push(fc.tuple(valid, fc.constantFrom(...required)).map(([body, name]) => json(omit(body, name))))
  const bounded = names.map((name) => [name, outOfBounds(properties[name]!)] as const).filter((e): e is readonly [string, fc.Arbitrary<unknown>] => e[1] !== undefined)
  if (bounded.length) {
    const outOfBound = fc.tuple(valid, fc.constantFrom(...bounded)).chain(([body, [name, bad]]) => bad.map((value) => json({ ...body, [name]: value })))
    body.push(outOfBound, outOfBound)
  }
  return { body: fc.oneof(...body), unicode: fc.oneof(...unicode), raw: fc.oneof(...raw), size: fc.oneof(...size) }
}

function omit(object: Record<string, unknown>, name: string): Record<string, unknown> {
  const { [name]: _, ...rest } = object
  return rest
}

// ---------------------------------------------------------------------------------------------
// The invariants
// ---------------------------------------------------------------------------------------------

interface Sent {
  method: InjectOptions['method']
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
}

function preview(payload: string | Buffer | undefined): string {
  if (payload === undefined) return '(none)'
  const text = typeof payload === 'string' ? payload : `bytes ${payload.toString('hex').slice(0, 200)}`
  return text.length > 300 ? `${JSON.stringify(text.slice(0, 300))}… (${Buffer.byteLength(payload)} bytes)` : JSON.stringify(text)
}

function violations(route: RouteSpec, sent: Sent, expect: Expect, res: { statusCode: number; headers: Record<string, unknown>; body: string }): string[] {
  const problems: string[] = []
  const status = res.statusCode
  if (status >= 500) problems.push(`a ${status}`)
  problems.push(...specProblems(String(sent.method), sent.url, res))
  const contentType = String(res.headers['content-type'] ?? '')
  const requestId = res.headers['x-request-id']
  if (typeof requestId !== 'string' || !REQUEST_ID.test(requestId)) problems.push(`X-Request-Id ${JSON.stringify(requestId)}`)
  const given = sent.headers['x-request-id']
  if (given !== undefined && REQUEST_ID.test(given) && requestId !== given) problems.push(`X-Request-Id ${given} was not kept`)
  if (status >= 400) {
    // A page for people answers its own errors with a page where the spec documents one
    // (specProblems above holds the content type to the spec); everything else is a problem.
    const page = contentType.startsWith('text/html')
    if (!page && !contentType.startsWith('application/problem+json')) problems.push(`error answered as ${contentType}`)
    let problem: Record<string, unknown> | undefined
    try {
      if (!page) problem = JSON.parse(res.body) as Record<string, unknown>
    } catch {
      problems.push('error body is not JSON')
    }
    if (problem) {
      if (problem.status !== status) problems.push(`problem status ${String(problem.status)} differs from HTTP ${status}`)
      if (!PROBLEM_CODES.includes(String(problem.code))) problems.push(`problem code ${String(problem.code)} is not in the Problem enum`)
      if (problem.request_id !== requestId) problems.push('problem request_id differs from X-Request-Id')
      if (expect.codes && !expect.codes.includes(String(problem.code))) problems.push(`expected code ${expect.codes.join(' or ')}, got ${String(problem.code)}`)
    }
    if (LEAK.test(res.body)) problems.push('the error leaks internals')
  } else if (status >= 200 && status < 300) {
    const schema = route.schema.response[String(status)]
    if (schema && Object.keys(schema).length && contentType.includes('json')) {
      const validate = validatorFor(schema)
      if (!validate(JSON.parse(res.body))) problems.push(`response does not match its schema: ${ajv.errorsText(validate.errors)}`)
    }
  }
  if (expect.statuses && !expect.statuses.includes(status)) problems.push(`expected ${expect.statuses.join(' or ')}, got ${status}`)
  return problems
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

const hash = (text: string) => [...text].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) | 0, 7)

t.test('adversarial requests against every operation of the spec', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 1_000_000 })
  const { key } = await createProject()
  const ctx: Context = { app, key, sequence: 0 }
  const started = Date.now()
  // Real ids of every kind, for the slots of the other kinds.
  const others = [
    ...Object.values((await createFixture(ctx, '/v1/beta/programs/{program_id}/testers/{id}')).params),
    ...Object.values((await createFixture(ctx, '/v1/changelog/{id}')).params),
    ...Object.values((await createFixture(ctx, '/admin/v1/projects/{id}/api-keys/{key_id}')).params),
  ]

  for (const route of routes) {
    await t.test(`${route.operationId}: ${route.method} ${route.path}`, async (t) => {
      const fixture = await createFixture(ctx, route.path)
      if (!fixture.real) t.comment(`${route.operationId}: no create operation for an id of ${route.path}; ids are made up`)
      const destructive = route.method === 'DELETE'
      let reached = 0

      for (const plan of plansFor(route, fixture, others, key)) {
        const property = fc.asyncProperty(plan.arbitrary, async (c) => {
          // A successful DELETE removes its target: each valid one gets targets of its own.
          const params = c.params ?? (destructive && c.kind === 'valid' ? (await createFixture(ctx, route.path)).params : fixture.params)
          const url = `${fill(route.path, params)}${c.query ? `?${c.query}` : ''}`
          const payload = c.body === undefined ? undefined : expandBody(c.body)
          let expect = c.expect
          if (BODY_KINDS.includes(c.kind) && payload !== undefined) expect = expectForBody(route.schema.body!, payload, route.bodyOptional === true)
          const sent: Sent = { method: route.method, url, headers: c.headers, payload }
          const res = await app.inject(sent)
          // A page answers only from the handler: a portal page for a made-up token reached it too.
          // A redirect (GET /docs) is its operation's answer.
          if (c.kind === 'valid' && (res.statusCode < 400 || String(res.headers['content-type']).startsWith('text/html'))) reached++
          const problems = violations(route, sent, expect, res)
          if (problems.length) {
            throw new Error(
              `${c.what}: ${route.method} ${url.length > 300 ? `${url.slice(0, 300)}… (${url.length} chars)` : url}\n` +
                `headers: ${JSON.stringify(c.headers)}\nbody: ${preview(payload)}\n` +
                `→ ${res.statusCode} ${res.body.slice(0, 600)}\n- ${problems.join('\n- ')}`,
            )
          }
        })
        try {
          await fc.assert(property, { seed: SEED ^ hash(`${route.operationId}/${plan.kind}`), numRuns: RUNS[plan.kind] })
          t.pass(`${plan.kind}: ${RUNS[plan.kind]} generated requests kept every invariant`)
        } catch (error) {
          // fast-check keeps the predicate's own error, the request and response, as the cause.
          const cause = (error as Error).cause instanceof Error ? `\n${((error as Error).cause as Error).message}` : ''
          t.fail(`${plan.kind}: ${(error as Error).message.split('\n')[0]!.slice(0, 3000)}${cause}`)
        }
      }
      if (fixture.real) t.ok(reached > 0, `valid requests reached the handler (${reached} answered 2xx, 3xx or a page)`)
    })
  }
  t.comment(`${routes.length} operations fuzzed in ${((Date.now() - started) / 1000).toFixed(1)} s`)
})
