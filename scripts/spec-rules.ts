// The rules a published document keeps so that clients generated from it keep working as it
// grows (contract §12, issue #16), each found by a generator on an earlier document. Checked by
// test/contract/published-documents.test.ts over every document the server publishes.
import { resolvePointer, type Json, type JsonObject } from './openapi-documents.js'

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
const EXTENSIBLE_WORDING = /extensible/i

/** The schemas of components/schemas (by name) that `roots` reach. */
function reachedSchemas(doc: JsonObject, roots: Json[]): Set<string> {
  const seen = new Set<string>()
  const visit = (node: Json): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!node || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node as JsonObject)) {
      if (key === 'example' || key === 'examples') continue
      if (key === '$ref' && typeof value === 'string') {
        if (seen.has(value)) continue
        seen.add(value)
        visit(resolvePointer(doc, value))
      } else visit(value)
    }
  }
  roots.forEach(visit)
  return new Set([...seen].filter((ref) => ref.startsWith('#/components/schemas/')).map((ref) => ref.slice('#/components/schemas/'.length)))
}

function operations(doc: JsonObject): { where: string; op: JsonObject; item: JsonObject }[] {
  return Object.entries((doc.paths ?? {}) as JsonObject).flatMap(([path, item]) =>
    METHODS.filter((m) => (item as JsonObject)[m]).map((m) => ({ where: `${m.toUpperCase()} ${path}`, op: (item as JsonObject)[m] as JsonObject, item: item as JsonObject })),
  )
}

/**
 * What a client reads (responses, and the payloads of webhooks, which a partner receives) and
 * what it writes (parameters and request bodies).
 */
function sides(doc: JsonObject): { read: Json[]; written: Json[] } {
  const read: Json[] = []
  const written: Json[] = []
  for (const { op, item } of operations(doc)) {
    read.push(op.responses)
    written.push(op.parameters ?? [], op.requestBody ?? {}, item.parameters ?? [])
  }
  for (const item of Object.values((doc.webhooks ?? {}) as JsonObject)) {
    for (const m of METHODS) if ((item as JsonObject)[m]) read.push((item as JsonObject)[m].requestBody ?? {})
  }
  return { read, written }
}

/** Every schema node inside `node` (a schema), with its JSON pointer-ish location. */
function eachSchema(node: Json, where: string, visit: (schema: JsonObject, where: string) => void): void {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return
  visit(node as JsonObject, where)
  const s = node as JsonObject
  for (const key of ['items', 'not', 'additionalProperties', 'contains', 'if', 'then', 'else']) if (s[key] && typeof s[key] === 'object') eachSchema(s[key], `${where}/${key}`, visit)
  for (const key of ['properties', 'patternProperties', '$defs']) for (const [name, sub] of Object.entries((s[key] ?? {}) as JsonObject)) eachSchema(sub, `${where}/${key}/${name}`, visit)
  for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) ((s[key] ?? []) as Json[]).forEach((sub, i) => eachSchema(sub, `${where}/${key}/${i}`, visit))
}

/** Inline schemas under `node` (parameters, media types), outside components/schemas. */
function inlineSchemas(node: Json, where: string, visit: (schema: JsonObject, where: string) => void): void {
  if (Array.isArray(node)) return node.forEach((item, i) => inlineSchemas(item, `${where}/${i}`, visit))
  if (!node || typeof node !== 'object') return
  for (const [key, value] of Object.entries(node as JsonObject)) {
    if (key === 'example' || key === 'examples') continue
    if (key === 'schema') eachSchema(value, `${where}/schema`, visit)
    else inlineSchemas(value, `${where}/${key}`, visit)
  }
}

/** The problems with `doc` as a document clients are generated from; empty when it keeps every rule. */
export function evolutionProblems(doc: JsonObject): string[] {
  const problems: string[] = []
  const schemas = (doc.components?.schemas ?? {}) as JsonObject
  const { read, written } = sides(doc)
  const readNames = reachedSchemas(doc, read)
  const writtenNames = reachedSchemas(doc, written)

  // Each schema, wherever it is written, with the sides that reach it.
  const all: { schema: JsonObject; where: string; read: boolean; written: boolean }[] = []
  for (const [name, schema] of Object.entries(schemas)) {
    eachSchema(schema, `#/components/schemas/${name}`, (s, where) => all.push({ schema: s, where, read: readNames.has(name), written: writtenNames.has(name) }))
  }
  for (const { where, op, item } of operations(doc)) {
    inlineSchemas(op.responses, `${where} responses`, (s, at) => all.push({ schema: s, where: at, read: true, written: false }))
    inlineSchemas([op.parameters ?? [], item.parameters ?? [], op.requestBody ?? {}], `${where} request`, (s, at) => all.push({ schema: s, where: at, read: false, written: true }))
  }

  for (const { schema, where, read: isRead, written: isWritten } of all) {
    const isObject = schema.type === 'object' || schema.properties !== undefined
    if (isRead && isWritten && (isObject || schema.enum || schema['x-extensible-enum'])) {
      problems.push(`${where}: used by requests and responses alike; split it (responses open, requests closed)`)
    }
    if (isRead && schema.additionalProperties === false) problems.push(`${where}: a response schema sets additionalProperties: false, so it cannot grow`)
    if (isRead && Array.isArray(schema.enum)) problems.push(`${where}: a response enum is closed; write x-extensible-enum`)
    if (Array.isArray(schema['x-extensible-enum'])) {
      if (isWritten) problems.push(`${where}: x-extensible-enum in a request; requests take a closed enum`)
      if (!EXTENSIBLE_WORDING.test(String(schema.description ?? ''))) problems.push(`${where}: x-extensible-enum without a description saying that values may be added`)
    }
    if (isWritten && !isRead && isObject && schema.additionalProperties !== false) problems.push(`${where}: a request object is open; set additionalProperties: false`)
    if (isWritten && !isRead && schema.properties) {
      for (const [name, property] of Object.entries(schema.properties as JsonObject)) {
        if ((property as JsonObject)?.default !== undefined) problems.push(`${where}/properties/${name}: a default on a request property (openapi-typescript makes the field required); say it in the description`)
      }
    }
    if (schema.$ref !== undefined && schema.default !== undefined) problems.push(`${where}: a default beside a $ref (generators drop it); wrap the $ref in allOf`)
    if (Array.isArray(schema.type) && schema.type.includes('null')) problems.push(`${where}: nullable written as a type list (generators drop its bounds); write oneOf: [schema, {type: 'null'}]`)
    if (schema.nullable !== undefined) problems.push(`${where}: nullable is not OpenAPI 3.1; write oneOf: [schema, {type: 'null'}]`)
    for (const [property, needs] of Object.entries((schema.dependentRequired ?? {}) as Record<string, string[]>)) {
      const description = String((schema.properties?.[property] as JsonObject | undefined)?.description ?? '')
      for (const other of needs) {
        if (!description.includes(`\`${other}\``)) problems.push(`${where}/properties/${property}: dependentRequired on ${other} is not said in its description (no generator honours it)`)
      }
    }
  }

  // Non-JSON responses: a named schema each.
  for (const { where, op } of operations(doc)) {
    for (const [status, response] of Object.entries((op.responses ?? {}) as JsonObject)) {
      const res = (response as JsonObject).$ref ? resolvePointer(doc, (response as JsonObject).$ref) : response
      for (const [media, content] of Object.entries(((res as JsonObject).content ?? {}) as JsonObject)) {
        if (/json/.test(media)) continue
        if (!(content as JsonObject).schema?.$ref) problems.push(`${where} ${status} ${media}: an inline schema; name it in components/schemas`)
      }
    }
  }

  // An operation that takes Idempotency-Key answers a retry made while the first request runs
  // with 409 idempotency_in_progress and Retry-After: its 409 names the header.
  const resolved = (node: Json) => ((node as JsonObject)?.$ref ? resolvePointer(doc, (node as JsonObject).$ref) : node) as JsonObject
  for (const { where, op, item } of operations(doc)) {
    const parameters = [...((op.parameters ?? []) as Json[]), ...((item.parameters ?? []) as Json[])].map(resolved)
    if (!parameters.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key')) continue
    const conflict = op.responses?.['409'] === undefined ? undefined : resolved(op.responses['409'])
    const names = Object.keys((conflict?.headers ?? {}) as JsonObject).map((name) => name.toLowerCase())
    if (!names.includes('retry-after')) problems.push(`${where} 409: it takes Idempotency-Key, so idempotency_in_progress may answer it, with Retry-After; document the header`)
  }

  // A 304 is the answer to If-None-Match: an operation documents both or neither (a review added
  // a read with a 304 and no If-None-Match, and no check said so).
  for (const { where, op, item } of operations(doc)) {
    const parameters = [...((op.parameters ?? []) as Json[]), ...((item.parameters ?? []) as Json[])].map(resolved)
    const takesTag = parameters.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'if-none-match')
    const notModified = op.responses?.['304'] !== undefined
    if (notModified && !takesTag) problems.push(`${where}: it documents a 304, so it takes If-None-Match; document the parameter`)
    if (takesTag && !notModified) problems.push(`${where}: it takes If-None-Match, so it may answer 304; document the response`)
  }

  // servers: an absolute URL, through a variable with an absolute default, and a short description.
  const servers = (doc.servers ?? []) as JsonObject[]
  if (!servers.length) problems.push('servers: none')
  for (const server of servers) {
    const url = String(server.url).replace(/\{(\w+)\}/g, (_, name: string) => String(server.variables?.[name]?.default ?? ''))
    if (!/^https?:\/\/[^/]/.test(url)) problems.push(`servers: ${server.url} is not an absolute URL`)
    if (!Object.keys(server.variables ?? {}).length) problems.push(`servers: ${server.url} has no variable for the deployment's address`)
    if (!server.description || String(server.description).length > 40) problems.push('servers: the description must be short (it becomes an identifier in some generators)')
  }

  // info.description: short (generators stamp it into the header of every file).
  const description = String(doc.info?.description ?? '')
  if (description.split('\n').filter(Boolean).length > 6 || description.length > 600) problems.push('info.description: more than 6 lines; move conventions to a tag or externalDocs')

  // Every component is used.
  for (const [section, entries] of Object.entries((doc.components ?? {}) as JsonObject)) {
    if (section === 'securitySchemes') continue
    const used = reachedSchemasAny(doc, section)
    for (const name of Object.keys(entries as JsonObject)) if (!used.has(name)) problems.push(`components/${section}/${name}: unused`)
  }
  return problems
}

/** The names in components/<section> that the document's paths, webhooks or other components use. */
function reachedSchemasAny(doc: JsonObject, section: string): Set<string> {
  const seen = new Set<string>()
  const prefix = `#/components/${section}/`
  const visit = (node: Json, visited: Set<string>): void => {
    if (Array.isArray(node)) return node.forEach((item) => visit(item, visited))
    if (!node || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node as JsonObject)) {
      if (key === '$ref' && typeof value === 'string') {
        if (value.startsWith(prefix)) seen.add(value.slice(prefix.length).replace(/~1/g, '/').replace(/~0/g, '~'))
        if (!visited.has(value)) {
          visited.add(value)
          visit(resolvePointer(doc, value), visited)
        }
      } else visit(value, visited)
    }
  }
  visit([doc.paths ?? {}, doc.webhooks ?? {}], new Set())
  return seen
}
