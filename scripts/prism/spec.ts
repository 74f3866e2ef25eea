// What openapi.yaml documents per operation that generated/routes.ts does not hold: every
// response status (the route table has only the success schemas) and the request media types.
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'

interface Operation {
  operationId?: string
  responses?: Record<string, unknown>
  requestBody?: { content?: Record<string, unknown> }
}
type Spec = { paths: Record<string, Record<string, Operation>> }

const operations = new Map<string, Operation>()
const spec = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Spec
for (const item of Object.values(spec.paths)) {
  for (const operation of Object.values(item)) {
    if (operation && typeof operation === 'object' && operation.operationId) operations.set(operation.operationId, operation)
  }
}

/** Documented statuses by operationId, as strings ('200', '304', ...). */
export const documentedStatuses: ReadonlyMap<string, readonly string[]> = new Map(
  [...operations].map(([id, operation]) => [id, Object.keys(operation.responses ?? {})]),
)

export const documents = (operationId: string, status: number): boolean => documentedStatuses.get(operationId)?.includes(String(status)) ?? false

/** The media type an operation's request body is sent in; undefined without a body. */
export function requestMediaType(operationId: string): 'application/json' | 'application/x-www-form-urlencoded' | undefined {
  const types = Object.keys(operations.get(operationId)?.requestBody?.content ?? {})
  if (types.length === 0) return undefined
  if (types.includes('application/json')) return 'application/json'
  if (types.includes('application/x-www-form-urlencoded')) return 'application/x-www-form-urlencoded'
  throw new Error(`${operationId} takes ${types.join(', ')}; teach scripts/prism to send it`)
}
