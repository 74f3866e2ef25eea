// The spec defines every route: each operation has exactly one route and handler, the server
// has no route the spec does not describe, and operations still answering 501 are the ones the
// spec marks x-not-implemented, with that 501 in their documents.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import { routes } from '../../generated/routes.js'
import { exportedOnce, handlerRegistry, handlers, mergedOnce, NOT_IMPLEMENTED } from '../../src/handlers/index.js'
import { isNotImplemented, notImplemented } from '../../src/handlers/not-implemented.js'
import { JsonText } from '../../src/http/json-text.js'
import { PLUGIN_OPERATIONS, type ApiRequest, type AppContext, type OperationId, type Principal } from '../../src/http/types.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { schemaProblems, source, spec } from '../helpers/spec-check.js'
import { readYaml } from '../helpers/yaml-cache.js'
import { audienceDocument, withNotImplemented } from '../../scripts/openapi-documents.js'

/** Routes a plugin adds besides its documented operations: Scalar's script. */
const PLUGIN_ASSETS = new Set(['GET /docs/js/scalar.js', 'HEAD /docs/js/scalar.js'])
/** Routes Scalar adds that the app answers 404, like an unknown path (app.ts). */
const PLUGIN_NOT_FOUND = ['/docs/openapi.json', '/docs/openapi.yaml']

const specOperations = Object.entries(spec.paths as Record<string, Record<string, { operationId: string }>>).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({ method: method.toUpperCase(), path, url: path.replace(/\{([^}]+)\}/g, ':$1'), operationId: op.operationId })),
)

t.test('every operation of openapi.yaml has exactly one route', async (t) => {
  const app = await testApp()
  const served = new Set(app.servedRoutes.map((r) => `${r.method} ${r.url}`))
  for (const op of specOperations) t.ok(served.has(`${op.method} ${op.url}`), `${op.operationId}: ${op.method} ${op.url} is served`)
  t.equal(new Set(specOperations.map((o) => o.operationId)).size, specOperations.length, 'operationIds are unique')
  t.equal(routes.length, specOperations.length, 'generated/routes.ts has every operation')
})

t.test('the server has no route that openapi.yaml does not describe', async (t) => {
  const app = await testApp()
  const documented = new Set(specOperations.flatMap((o) => [`${o.method} ${o.url}`, ...(o.method === 'GET' ? [`HEAD ${o.url}`] : [])]))
  const hidden = new Set(PLUGIN_NOT_FOUND.flatMap((url) => [`GET ${url}`, `HEAD ${url}`]))
  const undocumented = app.servedRoutes.map((r) => `${r.method} ${r.url}`).filter((r) => !documented.has(r) && !PLUGIN_ASSETS.has(r) && !hidden.has(r))
  t.same(undocumented, [])
  for (const url of PLUGIN_NOT_FOUND) {
    const res = await call(t, app, { url })
    t.equal(res.status, 404, `${url} answers like an unknown path`)
    t.equal(res.json.code, 'not_found')
  }
})

t.test('each operation has a handler, or is served by a named plugin', async (t) => {
  for (const op of specOperations) {
    const hasHandler = op.operationId in handlers
    const byPlugin = op.operationId in PLUGIN_OPERATIONS
    t.ok(hasHandler !== byPlugin, `${op.operationId}: exactly one of a handler or a plugin`)
  }
  t.same(Object.keys(handlers).filter((id) => !specOperations.some((o) => o.operationId === id)), [], 'no handler without an operation')
})

t.test('the registry takes each handler by its operationId, and names an operation without one', async (t) => {
  const { getHealth, ...others } = handlers
  t.equal(handlerRegistry({ ...handlers, helper: () => {} }).getHealth, getHealth, 'exports that are no operation are left out')
  t.notOk('helper' in handlerRegistry({ ...handlers, helper: () => {} }))
  t.throws(() => handlerRegistry(others), /openapi\.yaml has getHealth, and no module of src\/handlers exports a handler of that name: write it, or list it in NOT_IMPLEMENTED/)
})

t.test('a name exported by two handler modules stops the start: one would replace the other', async (t) => {
  t.throws(() => exportedOnce([{ getHealth: () => {}, record: () => {} }, { getHealth: () => {} }]), /more than one module of src\/handlers exports getHealth: give each export one name/)
  t.doesNotThrow(() => exportedOnce([{ getHealth: () => {} }, { listEvents: () => {} }]))
  // The registry is merged by mergedOnce, so a module added to its list is checked too (a review
  // added one to the merge alone, and its getBetaProgram replaced the real one without a word).
  const health = () => {}
  const events = () => {}
  t.same(Object.keys(mergedOnce([{ getHealth: health }, { listEvents: events }])), ['getHealth', 'listEvents'])
  t.equal(mergedOnce([{ getHealth: health }, { listEvents: events }]).listEvents, events)
  t.throws(() => mergedOnce([{ getHealth: health }, { getHealth: () => {} }]), /more than one module of src\/handlers exports getHealth/)
})

// Checked by the type check (npm run typecheck), not at run time: only an operation secured by an
// API key has a principal, so an operator, ops or portal handler that reads one does not compile
// (it was typed on every handler, and read where there is none it was a 500; a takeover review).
type PrincipalOf<K extends OperationId> = ApiRequest<K>['principal']
export const keyHandlersHaveOne: Principal = {} as PrincipalOf<'getChangelogEntry'>
// @ts-expect-error an operator operation has no principal
export const operatorHandlersHaveNone: Principal = {} as PrincipalOf<'adminListProjects'>
// @ts-expect-error a portal operation has no principal
export const portalHandlersHaveNone: Principal = {} as PrincipalOf<'getBetaJoinPage'>

t.test('operations not built yet are exactly those the spec marks, and their documents list the 501', async (t) => {
  const pending = Object.entries(handlers).filter(([, handler]) => isNotImplemented(handler)).map(([id]) => id)
  const marked = specOperations.filter((op) => (source.paths as Record<string, Record<string, { operationId?: string; 'x-not-implemented'?: boolean }>>)[op.path]![op.method.toLowerCase()]!['x-not-implemented'] === true).map((op) => op.operationId)
  t.same(pending.sort(), [...(NOT_IMPLEMENTED as readonly string[])].sort(), 'the handlers answering 501 are NOT_IMPLEMENTED')
  t.same([...(NOT_IMPLEMENTED as readonly string[])].sort(), marked.sort(), 'NOT_IMPLEMENTED is what openapi.yaml marks')
  for (const op of specOperations) {
    const responses = Object.keys(spec.paths[op.path][op.method.toLowerCase()].responses)
    t.equal(responses.includes('501'), marked.includes(op.operationId), `${op.operationId}: a 501 is documented only if it is not built`)
  }

  // The mark, on an operation that is built: every document gets the 501, and the rest do not.
  const marking = structuredClone(readYaml(new URL('../../openapi.yaml', import.meta.url))) as { paths: Record<string, Record<string, Record<string, unknown>>> }
  marking.paths['/v1/changelog/{id}']!.get!['x-not-implemented'] = true
  const partner = audienceDocument(withNotImplemented(marking), 'partner') as typeof marking
  const read = partner.paths['/v1/changelog/{id}']!.get! as { responses: Record<string, { description: string }>; description: string }
  t.match(read.responses['501']!.description, /not_implemented/)
  t.match(read.description, /^\*\*Not built yet: answers `501 not_implemented`/)
  t.notOk('501' in (partner.paths['/v1/changelog']!.get!.responses as object), 'an operation not marked has none')

  // And the handler of such an operation answers it, as a problem the document's 501 describes.
  const app = await testApp({}, { handlers: { getChangelogEntry: notImplemented('getChangelogEntry') } })
  const { key } = await createProject()
  const res = await app.inject({ url: '/v1/changelog/ch_000000000000000000000', headers: { authorization: `Bearer ${key}` } })
  t.equal(res.statusCode, 501)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(res.json().code, 'not_implemented')
  t.same(schemaProblems('Problem', res.json()), [])
})

t.test('each audience has its document, split from the hand-written one', async (t) => {
  const app = await testApp()
  const generated = (file: string) => JSON.parse(readFileSync(new URL(`../../generated/${file}`, import.meta.url), 'utf8'))
  const json = await call(t, app, { url: '/openapi.json' })
  t.equal(json.status, 200)
  t.same(json.json, audienceDocument(source, 'partner'), '/openapi.json is the partner document')
  t.same(json.json, generated('openapi.json'))
  const yaml = await call(t, app, { url: '/openapi.yaml' })
  t.equal(yaml.status, 200)
  t.match(yaml.headers['content-type'], /^application\/yaml/)
  t.same(parse(yaml.raw), json.json, '/openapi.yaml is the same document')
  const portal = await call(t, app, { url: '/portal/openapi.json' })
  t.equal(portal.status, 200)
  t.same(portal.json, audienceDocument(source, 'portal'), '/portal/openapi.json: pages, feeds and probes')
  const operator = await call(t, app, { url: '/admin/openapi.json', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  t.equal(operator.status, 200)
  t.same(operator.json, audienceDocument(source, 'operator'), '/admin/openapi.json: the operator API')
  t.equal((await call(t, app, { url: '/admin/openapi.json' })).status, 401, 'behind the operator token, like every /admin path')
  t.equal((await call(t, app, { url: '/admin/openapi.json', key: (await createProject()).key })).status, 401, 'an API key is not the operator token')
  // Key-less resources are readable from any origin (contract §7; found by an outside review:
  // a browser viewer on another origin could not fetch them); the operator's is not key-less.
  for (const [url, res] of [['/openapi.json', json], ['/openapi.yaml', yaml], ['/portal/openapi.json', portal]] as const) {
    t.equal(res.headers['access-control-allow-origin'], '*', `${url}: readable from any origin`)
  }
  t.notOk(operator.headers['access-control-allow-origin'], '/admin/openapi.json: no CORS header')
  // Each says what it is: the partner's summary (an API key per project) is wrong of the other two.
  for (const res of [portal, operator]) t.notMatch(res.json.info.summary, /one project per API key/, `${res.json.info.title}: its own summary`)
  t.match(operator.json.info.summary, /admin token/)
  const docs = await call(t, app, { url: '/docs/' })
  t.equal(docs.status, 200)
  t.match(docs.headers['content-type'], /^text\/html/)
  t.match(docs.raw, /\/openapi\.json/, 'the reference renders the partner document')
})

t.test('/v1 and /admin/v1 send no CORS headers', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { url: '/v1/beta/programs', key, headers: { origin: 'https://evil.example' } })
  t.notOk(res.headers['access-control-allow-origin'])
  const preflight = await call(t, app, { method: 'OPTIONS', url: '/v1/changelog', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
  t.notOk(preflight.headers['access-control-allow-origin'])
})

t.test('the reference page refuses unknown query parameters like every operation', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { url: '/docs/?foo=x' })
  t.equal(res.status, 400)
  t.equal(res.json.code, 'validation_failed')
  const escaped = await call(t, app, { url: '/docs/?a%2Fb~c=x' })
  t.same(escaped.json.errors.map((e: { path: string }) => e.path), ['/a~1b~0c'], 'at a JSON Pointer that names it (RFC 6901)')
  t.match(escaped.json.detail, /^query\/a~1b~0c /)
})

t.test('the reference page answers a Host, X-Forwarded-Proto or -Host that makes no URL with a 400, not a 500', async (t) => {
  const direct = await testApp()
  const bad = await call(t, direct, { url: '/docs/', headers: { host: 'a b' } })
  // The Host's own rule, as at every operation.
  t.same([bad.status, bad.json.code, bad.json.errors], [400, 'validation_failed', [{ in: 'header', path: '/Host', message: 'must be one host name or address, with an optional port, sent once' }]])
  t.equal((await call(t, direct, { url: '/docs/', headers: { host: 'docs.example:8080', 'x-forwarded-proto': 'a b' } })).status, 200, 'X-Forwarded-Proto from a proxy not trusted is ignored')
  t.equal((await direct.inject({ url: '/docs', headers: { host: 'a b' } })).statusCode, 400, "/docs, Scalar's redirect to /docs/, likewise")
  // The redirect is an operation of the spec (redirectToApiReference), which call holds it to.
  const moved = await call(t, direct, { url: '/docs' })
  t.same([moved.status, moved.headers.location, moved.raw], [301, '/docs/', ''])
  const proxied = await testApp({ trustProxy: ['127.0.0.1'] })
  const proto = await call(t, proxied, { url: '/docs/', headers: { 'x-forwarded-proto': 'a b' } })
  t.same([proto.status, proto.json.errors?.[0]?.path], [400, '/X-Forwarded-Proto'])
  const host = await call(t, proxied, { url: '/docs/', headers: { 'x-forwarded-host': 'a b' } })
  t.same([host.status, host.json.errors?.[0]?.path], [400, '/X-Forwarded-Host'])
  t.equal((await call(t, proxied, { url: '/docs/', headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'docs.example' } })).status, 200)
  t.equal((await call(t, proxied, { url: '/docs/', headers: { 'x-forwarded-proto': 'HTTPS' } })).status, 200, 'a scheme is case-insensitive')
})

// Spectral's owasp:api5:2023-admin-security-unique, held exactly (.spectral.yaml says why it is off).
t.test('the operator token secures /admin/* and /metrics, and nothing else secures them', async (t) => {
  const operator = (path: string) => path.startsWith('/admin/') || path === '/metrics'
  for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, { security?: Record<string, string[]>[] }>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      const schemes = (op.security ?? (spec as { security?: Record<string, string[]>[] }).security ?? []).flatMap((s) => Object.keys(s))
      if (operator(path)) t.same(schemes, ['AdminToken'], `${method.toUpperCase()} ${path}: the operator token only`)
      else t.notOk(schemes.includes('AdminToken'), `${method.toUpperCase()} ${path}: not the operator token`)
    }
  }
})

t.test('each published document is written once: every answer sends the same text', async (t) => {
  // Serialized per request, answers pipelined on one connection each held a copy (300 KB of the
  // partner document's), and two 64 KB writes ran the heap out (an attacker review).
  const spec = { json: { openapi: '3.1.0', n: 1 }, portal: { openapi: '3.1.0', n: 2 }, operator: { openapi: '3.1.0', n: 3 } }
  const ctx = { spec } as unknown as AppContext
  for (const [name, document] of [['getOpenApiJson', spec.json], ['getPortalOpenApiJson', spec.portal], ['getOperatorOpenApiJson', spec.operator]] as const) {
    const first = await handlers[name]({} as never, ctx)
    const again = await handlers[name]({} as never, ctx)
    t.ok(first.body instanceof JsonText, `${name}: text`)
    t.equal(again.body, first.body, `${name}: the same text, every time`)
    t.equal((first.body as JsonText<unknown>).text, JSON.stringify(document), `${name}: the document`)
  }
})
