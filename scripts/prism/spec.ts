// What openapi.yaml documents per operation: the response statuses (generated/routes.ts holds
// only the success schemas).
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'

type Spec = { paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>> }

function load(): Map<string, string[]> {
  const spec = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Spec
  const statuses = new Map<string, string[]>()
  for (const item of Object.values(spec.paths)) {
    for (const operation of Object.values(item)) {
      if (operation && typeof operation === 'object' && operation.operationId) statuses.set(operation.operationId, Object.keys(operation.responses ?? {}))
    }
  }
  return statuses
}

/** Documented statuses by operationId, as strings ('200', '304', ...). */
export const documentedStatuses: ReadonlyMap<string, readonly string[]> = load()

export const documents = (operationId: string, status: number): boolean => documentedStatuses.get(operationId)?.includes(String(status)) ?? false
