// Handler types come from the generated operations, so a field renamed in openapi.yaml breaks
// the build here instead of breaking a client.
import type { IncomingHttpHeaders } from 'node:http'
import type { Socket } from 'node:net'
import type { Readable } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import type { operations } from '../../generated/api.js'
import type { ApiKeyOperationId, ApiKeyReadId, OperationId } from '../../generated/routes.js'
import type { Config } from '../config.js'
import type { Repos } from '../db/repos/index.js'
import type { KeyScope } from '../db/repos/scope.js'
import type { MarkdownRenderer } from '../portal/markdown-rendering.js'
import type { BodyBudgets } from './body-budget.js'
import type { JsonText } from './json-text.js'
import type { SendWatch } from './send-rate.js'
import type { Metrics } from './metrics.js'

export type { ApiKeyOperationId, ApiKeyReadId, OperationId }
type Op<K extends OperationId> = operations[K]

type Defined<T> = [T] extends [never] ? Record<string, never> : [T] extends [undefined] ? Record<string, never> : NonNullable<T>
export type PathParams<K extends OperationId> = Defined<Op<K>['parameters']['path']>
export type Query<K extends OperationId> = Defined<Op<K>['parameters']['query']>
export type Body<K extends OperationId> = Op<K> extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : Op<K> extends { requestBody: { content: { 'application/x-www-form-urlencoded': infer F } } }
    ? F
    : undefined

type SuccessStatus = 200 | 201 | 202 | 204 | 304
type Content<R> = R extends { content: infer C } ? C[keyof C] : undefined
/**
 * Statuses the operation documents with an HTML page: a page answers its own errors (a 404
 * page for a person), where the API answers a problem thrown as an ApiError.
 */
type PageStatus<K extends OperationId> = {
  [S in keyof Op<K>['responses']]: Op<K>['responses'][S] extends { content: { 'text/html': string } } ? S : never
}[keyof Op<K>['responses']]
type ReplyStatus<K extends OperationId> = (keyof Op<K>['responses'] & SuccessStatus) | PageStatus<K>
/**
 * A body may also be sent as it is: the API's JSON as text already written (an event's stored
 * record, json-text.ts), any other as a stream of its bytes (the public changelog's pages and feeds).
 */
type Unserialized<R> = R extends { content: { 'application/json': infer J } } ? JsonText<J> : Readable
export type Reply<K extends OperationId> = {
  [S in ReplyStatus<K>]: {
    status: S
    body: Content<Op<K>['responses'][S]> | Unserialized<Op<K>['responses'][S]>
    headers?: Record<string, string>
  }
}[ReplyStatus<K>]

/** The project an API key belongs to, as the guard found it for this request (its plan and beta feature checked). */
export interface Principal {
  projectId: string
}

interface RequestParts<K extends OperationId> {
  id: string
  params: PathParams<K>
  query: Query<K>
  body: Body<K>
  /** The request headers, for the operations that document header parameters (conditional GETs). */
  headers: IncomingHttpHeaders
  /** The connection the request came on: what an answer holds is given back when it closes (body-budget.ts). */
  socket: Socket
  /** The client's address (behind a trusted proxy, the one it forwards), as the portal's budgets count it. */
  ip: string
  /**
   * Holds `bytes` of the budget for large answers for this request's answer before it is read:
   * a 503 when they do not fit (body-budget.ts).
   */
  holdAnswer(bytes: number): void
  log: FastifyBaseLogger
}

/**
 * `principal`: the project of the request's API key, looked up by the guard before the handler
 * runs. Only an operation secured by an API key has one: an admin, ops or portal handler that
 * reads it does not compile.
 */
export type ApiRequest<K extends OperationId> = RequestParts<K> & (K extends ApiKeyOperationId ? { principal: Principal } : { principal?: never })

/**
 * The request of a read that proves its own key (readByKey in guard.ts): no lookup has run, and
 * the handler reads by the key itself.
 */
export type KeyScopedRequest<K extends OperationId> = RequestParts<K> & { project: KeyScope }

export interface AppContext {
  config: Config
  repos: Repos
  /** Renders changelog bodies when they are written, off the event loop. */
  markdown: MarkdownRenderer
  /** The published OpenAPI documents (generated/): the partner's, also as YAML, the operator's and the portal's. */
  spec: { json: object; yaml: string; operator: object; portal: object }
  ping(): Promise<void>
  /** This app's metrics, served by GET /metrics. */
  metrics: Metrics
  /** The memory that large answers may hold while they are sent, the API's and the portal's (body-budget.ts). */
  bodyBudgets: BodyBudgets
  /** Sends large answers in slices, and closes the connections of clients that read them too slowly (send-rate.ts). */
  sendWatch: SendWatch
  /** Set once the server stops (app.drain(), app.close()): /readyz answers 503, every answer closes its connection. */
  lifecycle: { draining: boolean }
  /** The server's clock, in milliseconds (a test's own, to move time on). */
  now(): number
}

export type Handler<K extends OperationId> = (request: ApiRequest<K>, ctx: AppContext) => Promise<Reply<K>>
/** The handler of a read that proves its own key, before readByKey (guard.ts) makes it a Handler. */
export type KeyScopedHandler<K extends ApiKeyReadId> = (request: KeyScopedRequest<K>, ctx: AppContext) => Promise<Reply<K>>

/** Operations a plugin serves instead of a handler of ours, with the reason. */
export const PLUGIN_OPERATIONS = {
  getApiReference: '@scalar/fastify-api-reference renders /docs/ from the published document',
  redirectToApiReference: "@scalar/fastify-api-reference redirects /docs to /docs/, where its page's relative links resolve",
} as const satisfies Partial<Record<OperationId, string>>
export type HandledOperationId = Exclude<OperationId, keyof typeof PLUGIN_OPERATIONS>
export type HandlerMap = { [K in HandledOperationId]: Handler<K> }
