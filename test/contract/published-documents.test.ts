// The documents the server publishes keep the rules that let clients generated from them keep
// working as the API grows (contract §12): responses open, response enums extensible, requests
// closed, and none of the constructs generators were found to trip on. Each rule is also shown
// to catch a deliberately broken copy, so that a check that passes proves something.
import { readFileSync } from 'node:fs'
import SwaggerParser from '@apidevtools/swagger-parser'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import { AUDIENCES, audienceDocument, DOCUMENTS, type JsonObject } from '../../scripts/openapi-documents.js'
import { evolutionProblems } from '../../scripts/spec-rules.js'
import { schemaProblems, source } from '../helpers/spec-check.js'

const read = (file: string) => JSON.parse(readFileSync(new URL(`../../generated/${file}`, import.meta.url), 'utf8')) as JsonObject
const partner = read(DOCUMENTS.partner.file)

t.test('every published document keeps the evolution rules', async (t) => {
  for (const audience of AUDIENCES) t.same(evolutionProblems(read(DOCUMENTS[audience].file)), [], `${audience}: ${DOCUMENTS[audience].path}`)
  t.same(evolutionProblems(source), [], 'openapi.yaml, the source of all of them')
})

t.test('every published document passes @apidevtools/swagger-parser (swagger-cli validate, orval)', async (t) => {
  // A server variable's `description` failed it (its bundled OpenAPI 3.1 schema misspells the
  // field), and a partner's CI running `swagger-cli validate` stops there (found by a partner review).
  for (const audience of AUDIENCES) {
    await t.resolves(SwaggerParser.validate(structuredClone(read(DOCUMENTS[audience].file)) as never), `${audience}: ${DOCUMENTS[audience].file}`)
  }
  const withVariableDescription = structuredClone(partner) as { servers: Array<{ variables: Record<string, Record<string, unknown>> }> }
  withVariableDescription.servers[0]!.variables.origin!.description = 'The origin.'
  await t.rejects(SwaggerParser.validate(withVariableDescription as never), 'and it refuses what it was found to refuse')
})

t.test('the patterns with a lookaround are the three the conventions name', async (t) => {
  // Go's RE2 and Rust's regex have no lookaround; the conventions tell such clients which patterns to leave to the server.
  const found: string[] = []
  const walk = (node: unknown, where: string): void => {
    if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${where}/${i}`))
    if (node === null || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string' && /\(\?<?[=!]/.test(value)) found.push(where)
      else walk(value, `${where}/${key}`)
    }
  }
  walk(source, '#')
  t.same(found.sort(), [
    '#/components/schemas/BetaTesterEnroll/properties/email',
    '#/components/schemas/HttpUrl',
    '#/components/schemas/WebhookUrl',
  ])
  const conventions = (source.tags as Array<{ name: string; description: string }>).find((tag) => tag.name === 'conventions')!.description
  t.match(conventions.replace(/\s+/g, ' '), 'Three use a lookahead, which Go\'s `regexp` (RE2) and Rust\'s `regex` do not support: `HttpUrl`, `WebhookUrl` and the enrollment\'s `email`.')
})

t.test('generated/ holds exactly the split of openapi.yaml', async (t) => {
  for (const audience of AUDIENCES) t.same(read(DOCUMENTS[audience].file), audienceDocument(source, audience), DOCUMENTS[audience].file)
  const text = readFileSync(new URL('../../generated/openapi.yaml', import.meta.url), 'utf8')
  t.same(parse(text), partner, 'generated/openapi.yaml is the partner document')
  // Many partners' tools read YAML 1.1, where an unquoted 2026-11-22T10:00:00Z is a timestamp
  // and an unquoted yes a boolean, not the strings the JSON has (found by an outside review).
  const readAsOtherThanText = /^(?:- |[\w$.-]+: )(?:\d{4}-\d{2}-\d{2}|(?:yes|no|on|off|y|n)$)/i
  t.same(text.split('\n').filter((line) => readAsOtherThanText.test(line.trim())), [], 'no value a YAML 1.1 parser reads as a date or a boolean is left unquoted')
})

t.test('the partner document holds the /v1 operations and nothing else', async (t) => {
  const paths = Object.keys(partner.paths)
  t.ok(paths.length > 0)
  t.same(paths.filter((p) => !p.startsWith('/v1/')), [], 'only /v1 paths')
  t.same(Object.keys(partner.components.securitySchemes), ['ApiKey'], 'one bearer scheme: the API key')
  t.notMatch(JSON.stringify(partner), /x-audience/, 'no source-only marker')
  t.notMatch(JSON.stringify(partner), /AdminToken|ADMIN_TOKEN/, 'nothing of the operator API')
  const sourceV1 = Object.keys(source.paths).filter((p) => p.startsWith('/v1/'))
  t.same(paths, sourceV1, 'every /v1 path of the source')
})

t.test("a header only the portal's pages send is in the portal document alone", async (t) => {
  // X-Robots-Tag was documented on the /v1 errors the portal shares (400, 413, 429, 500, 503),
  // which never send it: a partner's generated client carried a header that cannot come (found
  // by a partner review).
  t.notMatch(JSON.stringify(partner), /X-Robots-Tag/, 'not in the partner document')
  t.notMatch(JSON.stringify(read(DOCUMENTS.operator.file)), /X-Robots-Tag/, 'nor the operator document')
  const portal = read(DOCUMENTS.portal.file)
  t.ok(portal.components.responses.BadRequest.headers['X-Robots-Tag'], "the portal document's shared 400 keeps it")
  t.equal(portal.components.headers['X-Robots-Tag']['x-audience'], undefined, 'without the source-only marker')
})

t.test('the operator and portal documents hold the rest, each operation once', async (t) => {
  const operator = read(DOCUMENTS.operator.file)
  const portal = read(DOCUMENTS.portal.file)
  t.ok(Object.keys(operator.paths).every((p) => p.startsWith('/admin/') || p === '/metrics'), 'the operator API and its metrics')
  t.same(Object.keys(operator.components.securitySchemes), ['AdminToken'])
  t.notOk(portal.components.securitySchemes, 'the portal document needs no credential')
  const ids = (doc: JsonObject) => Object.values(doc.paths as JsonObject).flatMap((item) => Object.values(item as JsonObject).map((op) => (op as JsonObject).operationId).filter(Boolean))
  const published = [...ids(partner), ...ids(operator), ...ids(portal)].sort()
  t.same(published, ids(source).sort(), 'every operation of openapi.yaml is in exactly one document')
})

/** Breaks one rule in a copy of the partner document and expects each of `expected` among its problems. */
function catches(t: Test, mutate: (doc: JsonObject) => void, expected: RegExp[]): void {
  const copy = structuredClone(partner)
  mutate(copy)
  const problems = evolutionProblems(copy)
  for (const pattern of expected) t.ok(problems.some((p) => pattern.test(p)), `${pattern} in ${JSON.stringify(problems)}`)
}

t.test('each rule catches a deliberately broken document', async (t) => {
  const s = (doc: JsonObject) => doc.components.schemas
  catches(t, (d) => (s(d).BetaProgram.additionalProperties = false), [/BetaProgram: a response schema sets additionalProperties: false/])
  catches(
    t,
    (d) => {
      s(d).Problem.properties.code.enum = s(d).Problem.properties.code['x-extensible-enum']
      delete s(d).Problem.properties.code['x-extensible-enum']
    },
    [/Problem\/properties\/code: a response enum is closed/],
  )
  catches(t, (d) => (s(d).BetaTesterStatus.description = 'The status.'), [/BetaTesterStatus: x-extensible-enum without a description/])
  catches(
    t,
    (d) => (d.paths['/v1/changelog/{id}'].get.parameters = d.paths['/v1/changelog/{id}'].get.parameters.filter((p: JsonObject) => !String(p.$ref).endsWith('/IfNoneMatch'))),
    [/GET \/v1\/changelog\/\{id\}: it documents a 304, so it takes If-None-Match/],
  )
  catches(t, (d) => delete d.paths['/v1/changelog/{id}'].get.responses['304'], [/GET \/v1\/changelog\/\{id\}: it takes If-None-Match, so it may answer 304/])
  catches(t, (d) => (s(d).BetaProgram.properties.status = { $ref: '#/components/schemas/BetaProgramStatusInput' }), [/BetaProgramStatusInput: used by requests and responses alike/, /a response enum is closed/])
  catches(t, (d) => delete s(d).BetaProgramCreate.additionalProperties, [/BetaProgramCreate: a request object is open/])
  catches(t, (d) => (s(d).BetaProgramCreate.properties.status = { $ref: '#/components/schemas/BetaProgramStatusInput', default: 'draft' }), [/BetaProgramCreate\/properties\/status: a default beside a \$ref/])
  catches(t, (d) => (s(d).BetaProgramCreate.properties.allow_public_signup.default = false), [/allow_public_signup: a default on a request property/])
  catches(t, (d) => (s(d).BetaProgram.properties.summary = { type: ['string', 'null'], maxLength: 1000 }), [/summary: nullable written as a type list/])
  catches(t, (d) => (s(d).ChangelogEntryCreate.properties.published_at.description = 'A timestamp.'), [/published_at: dependentRequired on status is not said/])
  catches(t, (d) => (d.servers = [{ url: '/', description: 'The server this document is served from' }]), [/servers: \/ is not an absolute URL/, /has no variable/])
  catches(t, (d) => (d.servers[0].description = 'The server this document is served from, in production or local'), [/servers: the description must be short/])
  catches(t, (d) => (d.info.description = 'Conventions:\n' + '- a rule\n'.repeat(10)), [/info.description: more than 6 lines/])
  catches(
    t,
    (d) => {
      const op = d.paths['/v1/changelog/{id}'].get
      op.responses['200'].content['text/html'] = { schema: { type: 'string', maxLength: 100 } }
    },
    [/GET \/v1\/changelog\/\{id\} 200 text\/html: an inline schema; name it/],
  )
  catches(t, (d) => (s(d).Unused = { type: 'string' }), [/components\/schemas\/Unused: unused/])
})

t.test('responses are still held to the closed reading', async (t) => {
  const program = {
    id: 'bp_V1StGXR8Z5jdHi6BmyT0a',
    project_id: 'prj_4f90d13a42Bc7Ed91fA0b',
    name: 'Beta',
    version: null,
    slug: 'beta',
    summary: null,
    access_url: null,
    access_instructions: null,
    status: 'active',
    allow_public_signup: false,
    feedback_deadline: null,
    created_at: '2026-11-22T10:00:00.000Z',
  }
  t.same(schemaProblems('BetaProgram', program), [], 'a record as the server sends it')
  t.not(schemaProblems('BetaProgram', { ...program, extra: 1 }).length, 0, 'a field the spec does not name fails the tests')
  t.not(schemaProblems('BetaProgram', { ...program, status: 'archived' }).length, 0, 'a status the spec does not list fails the tests')
  const problem = { type: 'about:blank', title: 'Conflict', status: 409, code: 'quota_exceeded', detail: 'x', request_id: 'r' }
  t.not(schemaProblems('Problem', problem).length, 0, 'a code the spec does not list fails the tests')
})
