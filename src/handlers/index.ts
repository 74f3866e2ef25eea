// The handler registry, derived from openapi.yaml: each operation is served by the export of the
// same name as its operationId, in one of the modules below (one per resource). A new operation
// in an existing module needs no edit here; a new module is one more entry in `handlerModules`.
import { NOT_IMPLEMENTED, routes } from '../../generated/routes.js'
import { PLUGIN_OPERATIONS, type HandledOperationId, type Handler, type HandlerMap, type OperationId } from '../http/types.js'
import * as admin from './admin.js'
import * as programs from './beta-programs.js'
import * as testers from './beta-testers.js'
import * as changelog from './changelog.js'
import * as events from './events.js'
import * as feedback from './feedback.js'
import * as metrics from './metrics.js'
import { notImplemented } from './not-implemented.js'
import * as ops from './ops.js'
import * as portalBeta from './portal-beta.js'
import * as portalChangelog from './portal-changelog.js'
import * as webhooks from './webhooks.js'

/**
 * Operations of openapi.yaml whose handlers are not written yet, marked `x-not-implemented: true`
 * there: each answers 501 not_implemented, as its documents say, until its handler lands (and
 * the mark leaves the spec).
 */
export { NOT_IMPLEMENTED }

/** Every module of src/handlers, once each. */
const handlerModules = [admin, programs, testers, changelog, feedback, metrics, ops, portalBeta, portalChangelog, webhooks, events] as const

/** The intersection of a list of modules' types: what their exports merged into one object hold. */
type Merged<T extends readonly object[]> = T extends readonly [infer First, ...infer Rest extends readonly object[]] ? First & Merged<Rest> : unknown

/**
 * Throws when two modules export one name: merged, the last one's would be kept, and a helper
 * named like an operationId elsewhere would silently replace that operation's handler.
 */
export function exportedOnce(modules: readonly object[]): void {
  const seen = new Set<string>()
  const twice = new Set<string>()
  for (const module of modules) for (const name of Object.keys(module)) (seen.has(name) ? twice : seen).add(name)
  if (twice.size) throw new Error(`more than one module of src/handlers exports ${[...twice].join(', ')}: give each export one name`)
}

/** The exports of every module of `list` in one object, checked by exportedOnce first. */
export function mergedOnce<const T extends readonly object[]>(list: T): Merged<T> {
  exportedOnce(list)
  return Object.assign({}, ...list) as Merged<T>
}

const modules = mergedOnce(handlerModules)
const pending = Object.fromEntries(NOT_IMPLEMENTED.map((id: OperationId) => [id, notImplemented(id)])) as {
  [K in (typeof NOT_IMPLEMENTED)[number]]: Handler<K>
}

for (const id of NOT_IMPLEMENTED as readonly string[]) {
  if (id in modules) throw new Error(`${id} has a handler: take it off NOT_IMPLEMENTED`)
}

// The compiler names any operation without a handler, and any handler whose type is not its
// operation's (a field renamed in the spec, a write wrapped in readByKey).
const exported = { ...modules, ...pending } satisfies HandlerMap

/** Picks each operation's handler out of `exported` by operationId; throws for an operation that has none. */
export function handlerRegistry(exported: Record<string, unknown>): HandlerMap {
  const registry: Record<string, unknown> = {}
  for (const { operationId } of routes) {
    if (operationId in PLUGIN_OPERATIONS) continue
    const handler = exported[operationId]
    if (typeof handler !== 'function') {
      throw new Error(`openapi.yaml has ${operationId}, and no module of src/handlers exports a handler of that name: write it, or list it in NOT_IMPLEMENTED`)
    }
    registry[operationId as HandledOperationId] = handler
  }
  return registry as HandlerMap
}

/** One handler per operationId of openapi.yaml. */
export const handlers: HandlerMap = handlerRegistry(exported)
