// The response schemas as Fastify's serializer (fast-json-stringify) gets them. It settles a
// `oneOf` at run time by validating the value against each branch with AJV, so every nullable
// field (`oneOf: [{ type: string, format, pattern, ... }, { type: 'null' }]`) ran its branch's
// format and pattern checks on every value of every response: 1.5 % of a GET's CPU, more on a
// page of rows. To write JSON, such a field is a string or null, which fast-json-stringify
// handles without AJV. Only the serializer's copy changes; the spec, and the tests' check of
// every response against it, do not.
import type { JsonSchema } from '../../generated/routes.js'

const isNull = (schema: unknown) => (schema as { type?: unknown } | null)?.type === 'null'

const isObject = (schema: unknown) => (schema as { type?: unknown } | null)?.type === 'object'

/**
 * `schema` with every `oneOf` of one scalar type and null written as a type list, and every
 * `oneOf` of records (an event's `data`: a tester, feedback, an entry or an endpoint) left
 * unconstrained, so that the value, made by its record's own mapper, is written as it is.
 */
export function serializerSchema(schema: JsonSchema): JsonSchema {
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite)
    if (!node || typeof node !== 'object') return node
    const { oneOf, ...rest } = node as { oneOf?: unknown[] } & Record<string, unknown>
    if (oneOf && oneOf.length > 1 && oneOf.every(isObject)) return rest
    if (oneOf?.length === 2 && oneOf.some(isNull)) {
      const other = oneOf.find((branch) => !isNull(branch)) as { type?: unknown }
      if (typeof other.type === 'string' && other.type !== 'object' && other.type !== 'array') return { ...rest, type: [other.type, 'null'] }
    }
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, rewrite(value)]))
  }
  return rewrite(schema) as JsonSchema
}
