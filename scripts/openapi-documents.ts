// openapi.yaml is one source for three audiences. This module derives from it:
//
// - the published documents, one per audience (`x-audience` on each tag): the partner document
//   (the /v1 operations and the webhooks), the operator document (the /admin API and /metrics)
//   and the portal document (the key-less pages, feeds, probes and the documents themselves),
//   each holding only the components it reaches;
// - the closed reading the server is typed and tested by: every response object closed
//   (`additionalProperties: false`) and every `x-extensible-enum` a plain `enum`. The published
//   documents leave responses open so that they may grow without breaking a deployed client
//   (contract §12); the project's own tests hold every response to the closed reading, so the
//   spec never lies about what the server sends today.

// The document is walked generically.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any
export type JsonObject = Record<string, Json>

export const AUDIENCES = ['partner', 'operator', 'portal'] as const
export type Audience = (typeof AUDIENCES)[number]

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** Where each audience's document is served, and its file under generated/. */
export const DOCUMENTS: Record<Audience, { path: string; file: string; title: string; summary?: string; description: string }> = {
  partner: {
    path: '/openapi.json',
    file: 'openapi.json',
    title: 'Feedback Service API',
    description: '',
  },
  operator: {
    path: '/admin/openapi.json',
    file: 'admin-openapi.json',
    title: 'Feedback Service operator API',
    summary: 'Projects, API keys and metrics, for the operators of a Feedback Service, behind its admin token.',
    description:
      'The operator API of the Feedback Service: projects, API keys and metrics, behind the server\'s `ADMIN_TOKEN`. ' +
      'Not for partners: their document is `/openapi.json`.\n',
  },
  portal: {
    path: '/portal/openapi.json',
    file: 'portal-openapi.json',
    title: 'Feedback Service public pages, feeds and probes',
    summary: 'The key-less side of a Feedback Service: its portal pages and forms, feeds, probes and documents.',
    description:
      'The key-less side of the Feedback Service: the portal\'s HTML pages and forms (for people), its feeds, the ' +
      'health and readiness probes (for operators), the reference page and the API documents. Not for generated ' +
      'clients: the partner API is `/openapi.json`.\n',
  },
}

const clone = <T>(value: T): T => structuredClone(value)

/**
 * openapi.yaml with its operations not built yet said to be so: an operation marked
 * `x-not-implemented: true` answers `501 not_implemented` (its handler is notImplemented, from
 * generated/routes.ts's NOT_IMPLEMENTED), so every document lists that `501`, in the form of
 * the operation's own `500`, and opens its description with it. Both the documents and the tests'
 * spec check read the source through this.
 */
export function withNotImplemented(source: JsonObject): JsonObject {
  const doc = clone(source)
  for (const item of Object.values(doc.paths as JsonObject)) {
    for (const method of METHODS) {
      const op = (item as JsonObject)[method] as JsonObject | undefined
      if (op?.['x-not-implemented'] !== true) continue
      if (!op.responses['500']) throw new Error(`${op.operationId} is not built yet and has no 500 to give its 501 the form of`)
      op.responses['501'] = { ...op.responses['500'], description: '`not_implemented`: this operation is not built yet, and answers so until it is.' }
      op.description = `**Not built yet: answers \`501 not_implemented\`.**\n\n${op.description ?? ''}`
    }
  }
  return doc
}

/** Calls `visit` on every schema object in `node` (a document or a part of one), depth first. */
function walkSchemas(node: Json, visit: (schema: JsonObject) => void, isSchema = false): void {
  if (Array.isArray(node)) {
    for (const item of node) walkSchemas(item, visit, isSchema)
    return
  }
  if (!node || typeof node !== 'object') return
  for (const [key, value] of Object.entries(node as JsonObject)) {
    if (key === 'example' || key === 'examples' || key === 'default' || key === 'const' || key === 'enum' || key.startsWith('x-')) continue
    if (key === 'schema' || (isSchema && ['items', 'not', 'additionalProperties', 'contains', 'if', 'then', 'else'].includes(key))) {
      walkSchemas(value, visit, true)
    } else if (isSchema && ['properties', 'patternProperties', '$defs', 'dependentSchemas'].includes(key)) {
      for (const sub of Object.values(value as JsonObject)) walkSchemas(sub, visit, true)
    } else if (isSchema && ['allOf', 'anyOf', 'oneOf', 'prefixItems'].includes(key)) {
      walkSchemas(value, visit, true)
    } else if (key === 'schemas' && !isSchema) {
      for (const sub of Object.values(value as JsonObject)) walkSchemas(sub, visit, true)
    } else if (!isSchema) {
      walkSchemas(value, visit, false)
    }
  }
  if (isSchema) visit(node as JsonObject)
}

/**
 * The closed reading of `doc`: each object schema without `additionalProperties` (or
 * `unevaluatedProperties`) gets `additionalProperties: false`, each `x-extensible-enum` becomes
 * `enum`. A request schema is closed already, so this closes the responses.
 */
export function closedReading(doc: JsonObject): JsonObject {
  const closed = clone(doc)
  walkSchemas(closed, (schema) => {
    if (Array.isArray(schema['x-extensible-enum'])) {
      schema.enum = schema['x-extensible-enum']
      delete schema['x-extensible-enum']
    }
    const isObject = schema.type === 'object' || (schema.properties && schema.type === undefined)
    if (isObject && schema.additionalProperties === undefined && schema.unevaluatedProperties === undefined) schema.additionalProperties = false
  })
  return closed
}

/** The audience of every operation in `doc`, by its first tag's `x-audience`. */
export function operationAudiences(doc: JsonObject): { path: string; method: string; operationId: string; audience: Audience }[] {
  const audienceOf = new Map<string, Audience>(((doc.tags ?? []) as JsonObject[]).map((tag) => [tag.name, tag['x-audience']]))
  const result = []
  for (const [path, item] of Object.entries(doc.paths as JsonObject)) {
    for (const method of METHODS) {
      const op = (item as JsonObject)[method] as JsonObject | undefined
      if (!op) continue
      const tag = (op.tags as string[] | undefined)?.[0]
      const audience = tag === undefined ? undefined : audienceOf.get(tag)
      if (!audience || !AUDIENCES.includes(audience)) throw new Error(`${method.toUpperCase()} ${path}: its first tag (${tag}) has no x-audience of ${AUDIENCES.join(', ')}`)
      result.push({ path, method, operationId: op.operationId as string, audience })
    }
  }
  return result
}

/** The `#/components/...` references `node` makes, and those their targets make, in `doc`. */
function reachableComponents(doc: JsonObject, roots: Json[]): Set<string> {
  const seen = new Set<string>()
  const visit = (node: Json): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!node || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node as JsonObject)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/')) {
        if (seen.has(value)) continue
        seen.add(value)
        visit(resolvePointer(doc, value))
      } else {
        visit(value)
      }
    }
  }
  roots.forEach(visit)
  return seen
}

export function resolvePointer(doc: JsonObject, ref: string): Json {
  let node: Json = doc
  for (const part of ref.slice(2).split('/')) node = (node as JsonObject)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')]
  if (node === undefined) throw new Error(`unresolved $ref ${ref}`)
  return node
}

/** Drops the source-only markers (`x-audience`) from a published document. */
function withoutSourceMarkers(tags: JsonObject[]): JsonObject[] {
  return tags.map(({ 'x-audience': _audience, ...tag }) => tag)
}

/**
 * Leaves out of `doc`'s responses the headers only another audience's operations send (a header
 * component with `x-audience`, such as the tester pages' `X-Robots-Tag`, on responses the
 * portal shares with /v1), and drops the marker.
 */
function withoutOtherAudiencesHeaders(doc: JsonObject, audience: Audience): void {
  const components = (doc.components?.headers ?? {}) as JsonObject
  const foreign = new Set<string>()
  for (const [name, header] of Object.entries(components)) {
    const owner = (header as JsonObject)['x-audience']
    if (owner !== undefined && owner !== audience) foreign.add(`#/components/headers/${name}`)
    delete (header as JsonObject)['x-audience']
  }
  const visit = (node: Json): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!node || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node as JsonObject)) {
      if (key === 'headers' && value && typeof value === 'object') {
        for (const [name, header] of Object.entries(value as JsonObject)) if (foreign.has((header as JsonObject)?.$ref)) delete (value as JsonObject)[name]
      } else visit(value)
    }
  }
  visit([doc.paths, doc.webhooks, doc.components?.responses])
}

/** The document `audience` is given: its operations, the components they reach, its tags and security scheme. */
export function audienceDocument(source: JsonObject, audience: Audience): JsonObject {
  const doc = clone(source)
  withoutOtherAudiencesHeaders(doc, audience)
  const ops = operationAudiences(doc)
  const paths: JsonObject = {}
  for (const [path, item] of Object.entries(doc.paths as JsonObject)) {
    const kept = ops.filter((op) => op.path === path && op.audience === audience)
    if (!kept.length) continue
    const pathItem: JsonObject = {}
    for (const [key, value] of Object.entries(item as JsonObject)) {
      if (!METHODS.includes(key) || kept.some((op) => op.method === key)) pathItem[key] = value
    }
    paths[path] = pathItem
  }
  // Webhooks are for partners: their receivers are partner code (contract §10).
  const webhooks: JsonObject = audience === 'partner' ? (doc.webhooks ?? {}) : {}
  const roots = [paths, webhooks, doc.security ?? []]
  const refs = reachableComponents(doc, roots)
  const components: JsonObject = {}
  for (const [section, entries] of Object.entries((doc.components ?? {}) as JsonObject)) {
    const kept = Object.fromEntries(
      Object.entries(entries as JsonObject).filter(([name]) => {
        if (section === 'securitySchemes') return usesScheme(paths, doc.security, name)
        return refs.has(`#/components/${section}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`)
      }),
    )
    if (Object.keys(kept).length) components[section] = kept
  }
  const usedTags = new Set(Object.values(paths).flatMap((item) => METHODS.flatMap((m) => ((item as JsonObject)[m]?.tags as string[]) ?? [])))
  const tags = withoutSourceMarkers((doc.tags as JsonObject[]).filter((tag) => tag['x-audience'] === audience && (usedTags.has(tag.name) || !operationsOf(doc, tag.name))))
  const meta = DOCUMENTS[audience]
  const info = { ...doc.info, title: meta.title, ...(meta.summary ? { summary: meta.summary } : {}), ...(meta.description ? { description: meta.description } : {}) }
  // The document-wide security applies to every operation without its own: kept only where one of them relies on it.
  const inherits = Object.values(paths).some((item) => METHODS.some((m) => (item as JsonObject)[m] && (item as JsonObject)[m].security === undefined))
  const out: JsonObject = {}
  for (const [key, value] of Object.entries(doc)) {
    if (key === 'info') out.info = info
    else if (key === 'paths') {
      out.paths = paths
      if (Object.keys(webhooks).length) out.webhooks = webhooks
    } else if (key === 'webhooks') continue
    else if (key === 'components') out.components = components
    else if (key === 'tags') out.tags = tags
    else if (key === 'security') {
      if (inherits) out.security = value
    } else out[key] = value
  }
  return out
}

/** Whether `tag` has any operation in `doc` (a tag without one, such as `conventions`, documents the audience). */
function operationsOf(doc: JsonObject, tag: string): boolean {
  return Object.values(doc.paths as JsonObject).some((item) => METHODS.some((m) => ((item as JsonObject)[m]?.tags as string[] | undefined)?.includes(tag)))
}

function usesScheme(paths: JsonObject, documentSecurity: JsonObject[] | undefined, name: string): boolean {
  return Object.values(paths).some((item) =>
    METHODS.some((m) => {
      const op = (item as JsonObject)[m] as JsonObject | undefined
      if (!op) return false
      const security = (op.security ?? documentSecurity ?? []) as JsonObject[]
      return security.some((requirement) => name in requirement)
    }),
  )
}
