// Checks a response against openapi.yaml: the status is documented for the operation, the
// content type is the documented one, and the body validates against its schema. Every
// response a test receives goes through here, so the spec can never lie about the server.
// The published documents leave response objects open and their enums extensible, so that
// they may grow (contract §12); the check reads them closed (scripts/openapi-documents.ts): a
// field or a value the spec does not name yet fails here.
import { Ajv2020 } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import { isDateTime } from '../../src/http/validation.js'
import { closedReading, withNotImplemented } from '../../scripts/openapi-documents.js'
import { readYaml } from './yaml-cache.js'

type AnyObject = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

/** openapi.yaml as the documents give it: every operation, for every audience. */
export const source = withNotImplemented(readYaml(new URL('../../openapi.yaml', import.meta.url)) as AnyObject)
/** Its closed reading, which responses are held to. */
export const spec = closedReading(source)

const ajv = new Ajv2020({ strict: false, allErrors: true })
formats.default(ajv, { mode: 'full', formats: ['uri', 'email', 'int32', 'int64'] })
ajv.addFormat('date-time', { type: 'string', validate: isDateTime })
ajv.addSchema(spec, 'openapi')

const operations = Object.entries(spec.paths as AnyObject).map(([path, item]) => ({
  path,
  regex: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  item: item as AnyObject,
}))

function resolve(node: AnyObject): AnyObject {
  while (node && typeof node.$ref === 'string') {
    node = node.$ref
      .slice(2)
      .split('/')
      .reduce((n: AnyObject, part: string) => n[part.replace(/~1/g, '/').replace(/~0/g, '~')], spec)
  }
  return node
}

function pointer(node: AnyObject): string {
  // A $ref into the document, for AJV to resolve against the registered schema.
  return `openapi#${node.$ref ? node.$ref.slice(1) : ''}`
}

/**
 * Every response header that openapi.yaml documents somewhere, lowercased. A response that sends
 * one must document it for its status, with a value its schema allows: a client generated from
 * the document reads the headers it names, and nothing else.
 */
const contractHeaders = new Set<string>()
for (const { item } of operations) {
  for (const operation of Object.values(item) as AnyObject[]) {
    for (const response of Object.values((operation?.responses ?? {}) as AnyObject)) {
      for (const name of Object.keys(resolve(response as AnyObject).headers ?? {})) contractHeaders.add(name.toLowerCase())
    }
  }
}

function headerProblems(where: string, response: AnyObject, headers: Record<string, unknown>): string[] {
  const problems: string[] = []
  const documented = new Map(Object.entries((response.headers ?? {}) as AnyObject).map(([name, header]) => [name.toLowerCase(), resolve(header as AnyObject)]))
  for (const name of contractHeaders) {
    const value = headers[name]
    const header = documented.get(name)
    if (value === undefined) {
      if (header?.required) problems.push(`${where}: header ${name} is documented as required and missing`)
      continue
    }
    if (!header) {
      problems.push(`${where}: sends ${name}, which this response does not document`)
      continue
    }
    const schema = header.schema as AnyObject | undefined
    if (!schema) continue
    const text = String(value)
    const instance = schema.type === 'integer' && /^-?\d+$/.test(text) ? Number(text) : text
    if (!ajv.validate(schema, instance)) problems.push(`${where}: header ${name}: ${JSON.stringify(text)} ${ajv.errorsText(ajv.errors)}`)
  }
  return problems
}

/**
 * The documented media type a Content-Type header matches: the same type, carrying every
 * parameter the spec names (`text/plain; version=0.0.4` for the metrics), as Prism matches them.
 */
function documentedMedia(content: AnyObject, header: string): AnyObject | undefined {
  const parts = (value: string) => value.split(';').map((part) => part.trim().toLowerCase())
  const [type, ...parameters] = parts(header)
  const key = Object.keys(content).find((documented) => {
    const [documentedType, ...required] = parts(documented)
    return documentedType === type && required.every((parameter) => parameters.includes(parameter))
  })
  return key === undefined ? undefined : content[key]
}

export interface CheckedResponse {
  statusCode: number
  headers: Record<string, unknown>
  body: string
}

/** The problems found with a response to `method url`; empty when it matches the spec. */
export function specProblems(method: string, url: string, res: CheckedResponse): string[] {
  const problems: string[] = []
  const pathname = url.split('?')[0]!
  const contentType = String(res.headers['content-type'] ?? '').split(';')[0]!.trim()
  if (!res.headers['x-request-id']) problems.push('no X-Request-Id header')
  // The router decodes a path's escapes (`/beta/jo%69n` is /beta/join): so does the match here.
  const decodedPath = (() => {
    try {
      return decodeURIComponent(pathname)
    } catch {
      return pathname
    }
  })()
  const match = operations.find((o) => o.regex.test(pathname)) ?? operations.find((o) => o.regex.test(decodedPath))
  const op = match?.item[(method === 'HEAD' ? 'GET' : method).toLowerCase()] as AnyObject | undefined
  if (!op) {
    // Not an operation of the spec: only a 404 or 405 problem is acceptable.
    if (![404, 405].includes(res.statusCode)) problems.push(`${method} ${pathname} is not in the spec but answered ${res.statusCode}`)
    if (contentType !== 'application/problem+json') problems.push(`unknown route answered ${contentType}`)
    if (res.statusCode === 405 && !res.headers.allow) problems.push('405 without Allow')
    return problems
  }
  const documented = op.responses[String(res.statusCode)] ?? op.responses.default
  if (!documented) return [`${op.operationId}: status ${res.statusCode} is not documented`]
  const response = resolve(documented)
  if (res.statusCode === 401 && res.headers['www-authenticate'] !== 'Bearer') problems.push('401 without WWW-Authenticate: Bearer')
  problems.push(...headerProblems(`${op.operationId} ${res.statusCode}`, response, res.headers))
  if (!response.content) {
    if (res.body !== '') problems.push(`${op.operationId} ${res.statusCode}: documented without a body but sent one`)
    return problems
  }
  const media = documentedMedia(response.content, String(res.headers['content-type'] ?? ''))
  if (!media) {
    problems.push(`${op.operationId} ${res.statusCode}: content type ${contentType} is not documented (${Object.keys(response.content).join(', ')})`)
    return problems
  }
  if (method === 'HEAD' || !contentType.endsWith('json')) return problems
  let body: unknown
  try {
    body = JSON.parse(res.body)
  } catch {
    return [...problems, `${op.operationId} ${res.statusCode}: body is not JSON`]
  }
  const schemaRef = media.schema.$ref ? pointer(media.schema) : undefined
  const validate = schemaRef ? ajv.getSchema(schemaRef) : ajv.compile(media.schema)
  if (!validate) return [...problems, `cannot compile schema ${schemaRef}`]
  if (!validate(body)) {
    for (const e of validate.errors ?? []) problems.push(`${op.operationId} ${res.statusCode}: ${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)
  }
  if (contentType === 'application/problem+json' && (body as AnyObject).status !== res.statusCode) {
    problems.push(`problem status ${(body as AnyObject).status} differs from HTTP ${res.statusCode}`)
  }
  return problems
}

/** The problems with `value` as an instance of the spec's `components/schemas/<name>`. */
export function schemaProblems(name: string, value: unknown): string[] {
  const validate = ajv.getSchema(`openapi#/components/schemas/${name}`)
  if (!validate) return [`no schema ${name}`]
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${name}: ${e.instancePath} ${e.message}`)
}

/**
 * The problems with a webhook delivery of an event of `type` as openapi.yaml's top-level
 * `webhooks` map documents it: the body against its payload schema (the closed reading, like
 * every response) and the headers it requires, each within its documented length.
 */
export function webhookProblems(type: string, delivery: { headers: Record<string, unknown>; body: string }): string[] {
  const operation = spec.webhooks?.[type]?.post as AnyObject | undefined
  if (!operation) return [`no webhook ${type} in openapi.yaml`]
  const problems: string[] = []
  for (const parameter of (operation.parameters ?? []).map(resolve) as AnyObject[]) {
    if (parameter.in !== 'header') continue
    const value = delivery.headers[parameter.name.toLowerCase()]
    if (value === undefined) {
      if (parameter.required) problems.push(`${type}: header ${parameter.name} is missing`)
    } else if (typeof value !== 'string' || (parameter.schema?.maxLength !== undefined && value.length > parameter.schema.maxLength)) {
      problems.push(`${type}: header ${parameter.name} is not a string of at most ${parameter.schema?.maxLength} characters`)
    }
  }
  const content = resolve(operation.requestBody).content as AnyObject
  const media = documentedMedia(content, String(delivery.headers['content-type'] ?? ''))
  if (!media) return [...problems, `${type}: content type ${String(delivery.headers['content-type'])} is not documented`]
  let body: unknown
  try {
    body = JSON.parse(delivery.body)
  } catch {
    return [...problems, `${type}: body is not JSON`]
  }
  const validate = media.schema.$ref ? ajv.getSchema(pointer(media.schema)) : ajv.compile(media.schema)
  if (!validate) return [...problems, `${type}: cannot compile its schema`]
  if (!validate(body)) for (const e of validate.errors ?? []) problems.push(`${type}: ${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)
  return problems
}
