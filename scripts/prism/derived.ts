// What the scenario derives instead of keeping lists by hand, so that a new operation needs steps
// in scenario.ts only for the statuses that take a story (a 201, a 409, a 412, ...):
// - a sample request per operation, for the derived steps and the sweeps: the latest request of
//   that operation that succeeded (its path and body), else the latest success on its path
//   template, else on the longest template its path extends (`/v1/beta/programs/{id}` for
//   `/v1/beta/programs/{id}/stats`), never on a resource a DELETE has removed since;
// - the path of a missing resource of the same kind, for the 404s.
import { routes, type RouteSpec } from '../../generated/routes.js'
import type { Exchange, SendOptions } from './observer.js'

export interface Sample {
  /** A path and query that answered 2xx. */
  path: string
  /** The body that went with it; none when the sample comes from another operation. */
  sent: Pick<SendOptions, 'json' | 'form'>
}

const templateOf = new Map(routes.map((route) => [route.operationId as string, route.path]))
const pathname = (path: string) => path.split('?')[0]!

/** The sample of each operation, from what has been sent so far; undefined when nothing on its path has succeeded. */
export function sampler(exchanges: readonly Exchange[]): (route: RouteSpec) => Sample | undefined {
  const deleted = new Set(exchanges.filter((e) => e.method === 'DELETE' && e.status === 204).map((e) => e.path))
  const successes = exchanges.filter((e) => e.status >= 200 && e.status < 300 && !deleted.has(e.path)).reverse()
  const onTemplate = (template: string) => successes.find((e) => templateOf.get(e.operationId) === template)
  return (route) => {
    const own = successes.find((e) => e.operationId === route.operationId)
    if (own) return { path: own.path, sent: own.sent }
    const sibling = onTemplate(route.path)
    if (sibling) return { path: pathname(sibling.path), sent: {} }
    // Parameters are compared by place, not name: `{id}` of a program is `{program_id}` below it.
    const shape = (template: string) => template.replace(/\{[^}]+\}/g, '{}')
    const parents = [...new Set(routes.map((r) => r.path))]
      .filter((parent) => shape(route.path).startsWith(`${shape(parent)}/`) && !shape(route.path).slice(shape(parent).length).includes('{'))
      .sort((a, b) => shape(b).length - shape(a).length)
    for (const parent of parents) {
      const found = onTemplate(parent)
      if (found) return { path: pathname(found.path) + shape(route.path).slice(shape(parent).length), sent: {} }
    }
    return route.path.includes('{') ? undefined : { path: route.path, sent: {} }
  }
}

/**
 * `path` (a sample of `route`) with its last id swapped for one of the same kind that exists
 * nowhere: `bp_...` becomes `bp_000...`. Undefined when the path ends in no prefixed id (a slug).
 */
export function missingPath(route: RouteSpec, path: string): string | undefined {
  const template = route.path.split('/')
  const parts = pathname(path).split('/')
  const last = template.findLastIndex((part) => part.startsWith('{'))
  const id = last < 0 ? undefined : /^([a-z]+_)([0-9A-Za-z]+)$/.exec(parts[last] ?? '')
  if (!id) return undefined
  parts[last] = id[1] + '0'.repeat(id[2]!.length)
  return parts.join('/')
}
