// Idempotency-Key on every POST under /v1 (Stripe / IETF draft semantics). Not on the operator
// API: its answers hold new API keys, and no answer holding one is ever stored. A request with a
// key runs in one transaction that holds the key: its write and its 2xx answer, stored under the
// key, commit together, and the answer is replayed to retries with the same method, path and
// body for 24 hours (`Idempotency-Replayed: true`). So a write whose answer was lost (a 503
// after the commit reached PostgreSQL) is found by the retry, and a request that failed (4xx,
// 5xx) leaves nothing: validation failures are never stored and a retry after a failure runs
// again. The same key with another body is 422; a retry while the first is still running is 409.
//
// No secret is kept: an answer that shows one (a webhook endpoint's signing secret) is stored
// with the secret's SHA-256 in its place, and its replay reads the secret afresh from where it
// lives, and shows it only while it is still the one answered (holdsSecret, below).
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { RequestHashes } from '../db/repos/idempotency.js'
import type { Repos } from '../db/repos/index.js'
import { ApiError, invalidField } from './errors.js'
import { JSON_TYPE, JsonText } from './json-text.js'
import { timesSent } from './raw-headers.js'
import type { ApiRequest, AppContext, Handler, OperationId, Reply } from './types.js'

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: { scope: string; key: string; hashes: RequestHashes }
  }
}

/**
 * Whether `value` is a key as openapi.yaml's `IdempotencyKey` parameter writes it (1 to 255
 * printable ASCII characters). Header parameters are not compiled from the spec, so the rule is
 * written here too; test/http/idempotency.test.ts holds the two equal.
 */
export const isIdempotencyKey = (value: string): boolean => /^[\x20-\x7E]{1,255}$/.test(value)

function idempotencyKey(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key']
  if (raw === undefined) return undefined
  // Node joins a repeated header's values with ", " into one string that may pass as one key: count them.
  if (typeof raw !== 'string' || !isIdempotencyKey(raw) || timesSent(request, 'idempotency-key') > 1) {
    throw invalidField('header', '/Idempotency-Key', 'must be 1 to 255 printable ASCII characters, sent once')
  }
  return raw
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** `value` as JSON with every object's members in the order of their names: one text for one JSON value. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  const members = Object.keys(value)
    .sort()
    .map((name) => `${JSON.stringify(name)}:${canonicalJson((value as Record<string, unknown>)[name])}`)
  return `{${members.join(',')}}`
}

/**
 * A request's two hashes. `value` is what makes two requests "the same method, path and body":
 * the operation, its path and query parameters as the router and validation read them, and the
 * body as a JSON value. So a retry whose client wrote the body's members in another order, the
 * path with an escape or the query in another order is the same request; it was 422 (found by a
 * partner review: RFC 8259 gives member order no meaning, and client libraries write a map in
 * any order). `sent` is what versions before 1.2.6 compared (the method, the URL as sent and the
 * body as written), stored too, so that such a version running beside this one in a rolling
 * deploy still replays a retry sent byte for byte (found by a review), and compared, for the keys
 * such a version stored. A match of either is the same request: `sent` hashes more of it.
 */
const requestHashes = (request: FastifyRequest): RequestHashes => ({
  sent: sha256(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`),
  value: sha256(canonicalJson([request.method, request.routeOptions.url, request.params, request.query, request.body ?? null])),
})

/**
 * The value's hash as stored: bound to the `sent` hash stored beside it. A version before 1.2.6
 * that takes over an expired key rewrites `request_hash` and leaves this column as it was; bound,
 * the stale value no longer matches, where it replayed the earlier request's answer to another
 * request (found by a review).
 */
const boundValue = (hashes: RequestHashes) => sha256(`${hashes.value} ${hashes.sent}`)

const sameRequest = (stored: { request_hash: string; request_value_hash: string | null }, hashes: RequestHashes) =>
  stored.request_hash === hashes.sent || stored.request_value_hash === boundValue({ value: hashes.value, sent: stored.request_hash })

export function registerIdempotency(app: FastifyInstance): void {
  // After authentication and validation, before the handler (which runs through answerIdempotently).
  app.addHook('preHandler', async (request) => {
    const route = request.routeOptions.config.route
    if (request.method !== 'POST' || !route || route.security !== 'ApiKey') return
    const key = idempotencyKey(request)
    if (key === undefined) return
    request.idempotency = { scope: request.principal!.projectId, key, hashes: requestHashes(request) }
  })
}

type Result = { status: number; body?: unknown; headers?: Record<string, string> }

/** An answer that shows a secret: a record (`data`) and the secret, at the top level. */
interface SecretAnswer {
  data: { id: string }
  secret?: unknown
}

/**
 * An answer as stored: its secret replaced by the secret's SHA-256, so that a replay shows the
 * secret only while it is still the one the answer showed. Showing the endpoint's current secret
 * instead gave the holder of an old Idempotency-Key the secret a rotation had made since, which
 * no answer of theirs had shown (found by an outside review; contract §10: shown at creation and
 * on rotation only).
 */
interface StoredSecretAnswer {
  data: { id: string }
  secret_sha256?: string
}

/** The 409 for a replay whose secret has been rotated since: the new one is not shown here. */
const secretRotated = () =>
  new ApiError(
    'secret_rotated',
    'The secret this Idempotency-Key\'s answer showed has been rotated since, and a replay does not show the new one (a rotation shows it, once); a new request needs a new key.',
  )

/**
 * Where the secret of a stored answer is read on a replay, in the replay's transaction: the
 * secret as it is now (after a rotation, the new one), or undefined when its resource has been
 * deleted since, which answers `gone()`.
 */
export interface SecretSource {
  current(repos: Repos, projectId: string, answer: SecretAnswer): Promise<string | undefined>
  gone(): ApiError
}

const SECRET_SOURCE = Symbol('answer holds a secret')

/** The headers of an answer that shows a secret (an API key, a signing secret): no cache may keep it. */
export const SHOWS_SECRET = { 'cache-control': 'no-store' } as const

/**
 * Marks a handler whose 2xx answer shows a secret under `secret`: under an Idempotency-Key, the
 * answer is stored without it (the idempotency table never holds a secret), and a replay answers
 * the stored record with the secret `source` reads then.
 */
export function holdsSecret<H extends (...args: never[]) => unknown>(handler: H, source: SecretSource): H {
  return Object.assign(handler, { [SECRET_SOURCE]: source })
}

const STAGES = Symbol('prepared before the write')

/**
 * A write whose slow first part needs no database: `prepare` runs first (a Markdown render,
 * which may wait its turn in the project's line for seconds), and `write` gets what it made.
 * Under an Idempotency-Key the write runs in the key's transaction, and `prepare` runs before
 * that transaction opens: otherwise each body waiting for its render held a connection of the
 * pool (the embedded database has one) and the other requests of the instance waited behind it
 * (found by an outside review).
 */
export function preparedWrite<K extends OperationId, P>(
  prepare: (request: ApiRequest<K>, ctx: AppContext) => Promise<P>,
  write: (request: ApiRequest<K>, ctx: AppContext, prepared: P) => Promise<Reply<K>>,
): Handler<K> {
  const handler: Handler<K> = async (request, ctx) => write(request, ctx, await prepare(request, ctx))
  return Object.assign(handler, { [STAGES]: { prepare, write } })
}

type Run = (ctx: AppContext) => Promise<Result>
type Stages = { prepare: (request: unknown, ctx: AppContext) => Promise<unknown>; write: (request: unknown, ctx: AppContext, prepared: unknown) => Promise<Result> }

/**
 * How answerIdempotently runs `handler` for a request: whatever it prepares, now; the rest, in
 * the key's transaction. The key decides first what the request gets: a key that holds an answer
 * replays it without preparing anything (a replay takes no turn at the renderer, and its request
 * need not pass again: a schedule may have passed since), and a refusal found while preparing is
 * answered only if the key is free, so that a replay or a 409 or 422 still comes from the key.
 */
export function stagedRun(handler: (request: never, ctx: AppContext) => Promise<Result>): (request: FastifyRequest, ctx: AppContext) => Promise<Run> {
  const whole = (request: FastifyRequest): Run => (inTransaction) => handler(request as never, inTransaction)
  const stages = (handler as { [STAGES]?: Stages })[STAGES]
  if (!stages) return async (request) => whole(request)
  return async (request, ctx) => {
    const { scope, key } = request.idempotency!
    if (await ctx.repos.idempotency.answered(scope, key)) return whole(request)
    const prepared = await stages.prepare(request, ctx).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    )
    return (inTransaction) => ('error' in prepared ? Promise.reject(prepared.error) : stages.write(request, inTransaction, prepared.value))
  }
}

export const secretSourceOf = (handler: unknown): SecretSource | undefined =>
  typeof handler === 'function' && SECRET_SOURCE in handler ? (handler as unknown as { [SECRET_SOURCE]: SecretSource })[SECRET_SOURCE] : undefined

/** The answer as stored: its secret's SHA-256 in place of the secret. */
function withoutSecret(body: unknown): string {
  const { secret, ...kept } = body as SecretAnswer
  const stored: StoredSecretAnswer = { ...kept, secret_sha256: sha256(String(secret)) }
  return JSON.stringify(stored)
}

/**
 * Runs a handler for a request that sent an Idempotency-Key (request.idempotency), in the key's
 * transaction, on that transaction's repositories, and sends its answer (or the stored one).
 * `secret`: the handler's answer shows a secret (holdsSecret).
 */
export async function answerIdempotently(
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: AppContext,
  run: Run,
  secret?: SecretSource,
): Promise<FastifyReply> {
  const { scope, key, hashes } = request.idempotency!
  const sent = await ctx.repos.transaction(async (tx): Promise<{ status: number; payload: string | undefined; replayed?: Record<string, string> }> => {
    const repo = tx.idempotency
    const held = await repo.hold(scope, key)
    if (held.state === 'running') {
      throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is still running; retry shortly.', { headers: { 'retry-after': '1' } })
    }
    if (held.state === 'done') {
      if (!sameRequest(held.record, hashes)) {
        throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with another request; use a new key for a new request.')
      }
      const status = held.record.response_status!
      // Sent once the transaction has committed: a replay whose commit fails is a 503, which
      // must not say it replayed (found by a review that cut the COMMIT's answer).
      const replayed: Record<string, string> = { 'idempotency-replayed': 'true', ...(held.record.response_location ? { location: held.record.response_location } : {}) }
      if (!secret) return { status, payload: held.record.response_body!, replayed }
      const { secret_sha256: shown, ...stored } = JSON.parse(held.record.response_body!) as StoredSecretAnswer & SecretAnswer
      const current = await secret.current(tx, scope, stored)
      if (current === undefined) throw secret.gone()
      // Answers stored before the fingerprint was (within a day of the upgrade) have none to compare.
      if (shown !== undefined && sha256(current) !== shown) throw secretRotated()
      reply.code(status)
      return { status, payload: reply.serialize({ ...stored, secret: current }) as string, replayed: { ...replayed, ...SHOWS_SECRET } }
    }
    const result = await run({ ...ctx, repos: tx })
    if (result.headers) reply.headers(result.headers)
    reply.code(result.status)
    // Serialized here, as Fastify would, so that what is stored is what is sent.
    const payload = result.body === undefined ? undefined : result.body instanceof JsonText ? result.body.text : (reply.serialize(result.body) as string)
    if (result.status >= 200 && result.status < 300 && payload !== undefined) {
      const location = reply.getHeader('location')
      const stored = secret ? withoutSecret(result.body) : payload
      await repo.save(scope, key, { sent: hashes.sent, value: boundValue(hashes) }, { status: result.status, location: typeof location === 'string' ? location : undefined, body: stored })
    }
    return { status: result.status, payload }
  })
  if (sent.replayed) reply.headers(sent.replayed)
  reply.code(sent.status)
  if (sent.payload === undefined) return reply.send()
  return reply.type(JSON_TYPE).send(sent.payload)
}
