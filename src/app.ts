// buildApp(config, db): plugins, hooks and routes. It never listens; the server and the tests
// call it alike.
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { maxHeaderSize, type IncomingMessage } from 'node:http'
import swagger from '@fastify/swagger'
import scalar from '@scalar/fastify-api-reference'
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Config } from './config.js'
import type { DbHandle } from './db/client.js'
import { makeRepos } from './db/repos/index.js'
import { loggableError } from './db/results.js'
import { handlers } from './handlers/index.js'
import { ApiError, BODY_LIMIT, invalidField, sendProblem, toApiError } from './http/errors.js'
import { makeGuard } from './http/guard.js'
import { registerFormParser } from './http/form-parser.js'
import { refuseCodedBody, registerJsonParser } from './http/json-parser.js'
import { bodyBudget, registerBodyBudget, type BodyBudgets } from './http/body-budget.js'
import { SEND_WINDOW_MS, sendWatch, type SendWatch, type SendWatchOptions } from './http/send-rate.js'
import { registerConditionalRequests } from './http/conditional.js'
import { docsPolicy } from './http/docs-policy.js'
import { checkingInterval, isClientGone, limitPipelining, logClientGone, makeClientErrorHandler, makeConnectHandler, MAX_PIPELINED, NOSNIFF, unfinishedRequestSweep, type RoutedRequests } from './http/connection.js'
import { registerIdempotency } from './http/idempotency.js'
import { isStatementTimeout, makeMetrics, type Metrics } from './http/metrics.js'
import { registerRateLimit } from './http/rate-limit.js'
import { makeKeyUsage, type KeyUsage, type Schedule } from './http/key-usage.js'
import { notFoundOrNotAllowed, registerRoutes, routedPath } from './http/routes.js'
import type { AppContext, HandlerMap } from './http/types.js'
import { MarkdownRenderer } from './portal/markdown-rendering.js'
import { documentPaths } from './paths.js'
import { pointerToken } from './http/field-messages.js'
import { refuseInvalidHost, refuseRepeatedContentType, refuseUndecodableUrl, refuseUnmetExpectation, routableUrl, undecodablePath, validatorCompiler } from './http/validation.js'

/** How long nothing may move on a connection while a request is served (connectionTimeout below). */
export const STALLED_CONNECTION_MS = 60_000
const DOCS = '/docs'
const SCALAR_DOCUMENT_COPIES = new Set([`${DOCS}/openapi.json`, `${DOCS}/openapi.yaml`])
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
const readDocument = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as object

/** Set on a request once its headers' own rules have been checked (refuseBadHeaders). */
const HEADERS_CHECKED = Symbol('headers checked')

/**
 * What the headers alone refuse, a 400: a Host missing or bad, a Content-Type sent twice, an
 * Expect the server does not meet. Run once a request: as a preParsing hook after the guard's, so
 * after a 401, 403 or 429 and before the body is parsed (a 400 here wins over the parser's 415
 * and 413: found by an outside review, a second Content-Type of text/plain was a 415), and again
 * in preValidation for the routes registered before that hook (the reference under /docs/).
 */
function refuseBadHeaders(request: FastifyRequest & { [HEADERS_CHECKED]?: true }): void {
  if (request[HEADERS_CHECKED]) return
  request[HEADERS_CHECKED] = true
  refuseInvalidHost(request)
  refuseRepeatedContentType(request)
  // HTTP/1.0 has no Expect (RFC 9110 §10.1.1).
  if (request.raw.httpVersion === '1.1') refuseUnmetExpectation(request)
}

/**
 * A preParsing hook, after the guard's: the headers' own rules, then a body in a coding the server
 * does not read (a 415); then a client that asked whether to send its body (Expect: 100-continue)
 * is told to now that nothing will refuse it unread (found by an attacker review: Node said 100
 * Continue at once, to requests then answered 401 or 413).
 */
async function refuseBeforeTheBody(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  refuseBadHeaders(request)
  refuseCodedBody(request)
  if (request.headers.expect === undefined || request.raw.httpVersion !== '1.1') return
  if (reply.raw.headersSent || Number(request.headers['content-length'] ?? 0) > BODY_LIMIT) return
  reply.raw.writeContinue()
  invited.add(request.raw)
}

/** Requests told 100 Continue. */
const invited = new WeakSet<IncomingMessage>()
/** When Node takes an HTTP/1.1 request for one that waits for 100 Continue (lib/_http_server.js). */
const EXPECTS_CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/**
 * Whether the connection closes after this answer because its client was never invited to send
 * the body it holds back: Node then closes it (the body's bytes might yet come, or never), and
 * the answer says so. It said nothing, as the error handler drops Fastify's Connection header
 * (found by an operator review: a 401 to a POST with Expect: 100-continue).
 */
const closesUninvited = (request: FastifyRequest) =>
  request.raw.httpVersion === '1.1' && EXPECTS_CONTINUE.test(request.headers.expect ?? '') && !invited.has(request.raw)

declare module 'fastify' {
  interface FastifyInstance {
    servedRoutes: readonly { method: string; url: string }[]
    keyUsage: KeyUsage
    /** The app's metrics, which GET /metrics serves: the webhook dispatcher counts its attempts in them. */
    metrics: Metrics
    /** The watch on how fast large answers are sent: a test with no window runs its checks (http/send-rate.ts). */
    sendWatch: SendWatch
    /** The server is stopping: /readyz answers 503, and every answer from now on closes its connection. */
    drain(): void
  }
}

/**
 * The tester pages' paths (the join page and its answers, the feedback form, a program's signup),
 * as routedPath gives them, so that `/beta/jo%69n` and an absolute-form target count too:
 * their URLs, forms and answers hold a tester's token or email, so every answer there is noindex
 * (contract §13), a refusal the router makes (405) or a problem (400, 429) included.
 */
const TESTER_PAGES = /^\/(?:beta\/(?:join|feedback)|portal\/[^/]+\/beta\/[^/]+)\/?$/
/** The public feeds' paths: every answer there carries FEED_HEADERS, a 200, 304, 404 or 429 alike. */
const FEEDS = /^\/portal\/[^/]+\/changelog\.(?:atom|json)$/
/**
 * A feed's readers may be web pages on any origin (contract §7); it holds only published
 * entries. Opened in a browser tab, it must run and load nothing, whatever an entry holds.
 */
const FEED_HEADERS = { 'access-control-allow-origin': '*', 'content-security-policy': "default-src 'none'" }

/**
 * The router refuses a URL it cannot decode, which routableUrl (validation.ts) leaves it none of:
 * such a path is routed as its text and refused after the guard. It would refuse a path segment
 * over maxParamLength too, before any hook; that is set to Node's header limit, which the request
 * line is held to, so over HTTP it never does (only app.inject() can send a longer one), and an
 * id of any length and the wrong shape is its operation's 404, after the guard's 401 and 403.
 */
function routerProblem(error: FastifyError): ApiError {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return new ApiError('not_found', 'No such resource.')
  if (error.code === 'FST_ERR_BAD_URL') return undecodablePath()
  return toApiError(error)
}

export interface BuildOptions {
  /** Overrides the logger, for tests that read the log lines. */
  logger?: { stream: NodeJS.WritableStream }
  /** The server's clock (the in-memory rate limits', last_used_at's, the feeds' Last-Modified's), for tests that move time on. */
  now?: () => number
  /** Replaces the Markdown renderer, for tests that watch it. */
  markdown?: MarkdownRenderer
  /** When last_used_at is written (http/key-usage.ts; `byHand`: only when app.keyUsage.flush() is called), and for how many keys at most. */
  keyUsage?: { schedule?: Schedule; maxKeys?: number }
  /** Replaces some operations' handlers, for tests of what the routes and the guard do around a handler. */
  handlers?: Partial<HandlerMap>
  /**
   * Called once a transaction that made webhook deliveries due has committed: server.ts wakes
   * the instance's dispatcher (src/jobs/webhook-dispatcher.ts) with it, and so may a test.
   */
  deliveriesDue?: () => void
  /** How long a connection may stall while a request is served (STALLED_CONNECTION_MS), for tests. */
  stalledConnectionMs?: number
  /** Replaces the budgets of memory that large answers hold while sent (http/body-budget.ts), for tests that watch them. */
  bodyBudgets?: Partial<BodyBudgets>
  /** Changes the watch on how fast large answers are sent (http/send-rate.ts): a test sets no window and runs its checks itself (app.sendWatch). */
  sendWatch?: Pick<SendWatchOptions, 'minBytes' | 'windowMs'>
}

/**
 * Scalar builds the page's URL from the request's protocol and host name, which the client chooses
 * (its Host, or through a proxy TRUST_PROXY names, X-Forwarded-Proto and -Host): one that makes no
 * URL is the client's 400, not Scalar's 500.
 */
function refuseUnbuildableUrl(request: FastifyRequest): void {
  // The Host's own rules first (a missing one named as such): this runs before the preValidation hook.
  refuseInvalidHost(request)
  if (!/^https?$/i.test(request.protocol)) throw invalidField('header', '/X-Forwarded-Proto', 'must be http or https')
  if (!URL.canParse(`${request.protocol}://${request.hostname}/`)) {
    const header = request.headers['x-forwarded-host'] !== undefined && request.host !== request.headers.host ? 'X-Forwarded-Host' : 'Host'
    throw invalidField('header', `/${header}`, 'must be a host name or address, with an optional port')
  }
}

/**
 * The app: Fastify, its hooks, its routes. A request meets the hooks in this order (Fastify runs a
 * phase's hooks in the order they are added, a route's own after the app's), which is how the
 * contract's precedence holds: 401, 403 and 429 before anything about the body.
 *
 * | phase         | hooks, in order                                                                    |
 * |---------------|------------------------------------------------------------------------------------|
 * | onRequest     | guard.identify (the key's shape and hash, the operator token); the portal's and    |
 * |               | the operator's per-address limits (@fastify/rate-limit, a route hook)              |
 * | preParsing    | guard.authorize (the key looked up or counted: 401, 403, 429); refuseBeforeTheBody |
 * |               | (the headers' 400s, a coded body's 415, then 100 Continue)                         |
 * | (body parsed) | json-parser.ts, form-parser.ts (400, 413, 415)                                     |
 * | preValidation | refuseBadHeaders again for /docs/, refuseUndecodableUrl; form-parser.ts (a portal  |
 * |               | form must be a form); conditional.ts (If-None-Match and If-Match bounds)           |
 * | validation    | the route's schemas (validation.ts)                                                |
 * | preHandler    | idempotency.ts (Idempotency-Key)                                                   |
 * | handler       | routes.ts, then the handler                                                        |
 * | onSend        | this file's (request id, nosniff, the pages' and feeds' headers, Connection: close |
 * |               | while draining); conditional.ts (ETag, 304); body-budget.ts (large answers)        |
 * | onResponse    | metrics, the key's last use, the request's log line                                |
 *
 * Errors thrown anywhere go to the error handler below (guard.refusal settles a 4xx first).
 */
export async function buildApp(config: Config, database: DbHandle, options: BuildOptions = {}): Promise<FastifyInstance> {
  // Each routed request's id, and each connection's last, for what is written beneath Fastify (connection.ts).
  const routed: RoutedRequests = { ids: new WeakMap(), lastOnSocket: new WeakMap() }
  // This app's own registry: tests build several apps in one process.
  const metrics = makeMetrics(
    () => database.poolStats(),
    () => database.deadlineMisses(),
  )
  const app = Fastify({
    logger: { level: config.logLevel, ...(options.logger ? { stream: options.logger.stream } : {}) },
    // One line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
      routed.ids.set(req, id)
      routed.lastOnSocket.set(req.socket, req)
      return id
    },
    bodyLimit: BODY_LIMIT,
    // A connection on which nothing moves for this long while a request is served is closed: a
    // client that stops reading an answer would otherwise hold it, and what it holds (a page's
    // HTML or a page of records, http/body-budget.ts), for ever. Between requests the keep-alive timeout applies.
    connectionTimeout: options.stalledConnectionMs ?? STALLED_CONNECTION_MS,
    // request.ip, which the rate limits count by: X-Forwarded-For is believed from these proxies only.
    trustProxy: config.trustProxy.length ? [...config.trustProxy] : false,
    // Node's default is no limit: a body trickled a byte at a time would hold its connection for
    // ever. Set on the server at creation too, so that Node derives headersTimeout from it.
    requestTimeout: config.requestTimeoutMs,
    // requireHostHeader: a request without Host is refused by refuseInvalidHost, as every 400 is.
    http: { requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: checkingInterval(config.requestTimeoutMs), requireHostHeader: false },
    clientErrorHandler: makeClientErrorHandler(config.requestTimeoutMs, routed),
    // Fastify's own 503 while closing is plain JSON without our headers; requests that reach us
    // while draining are served, since the pool closes only after the server has.
    return503OnClosing: false,
    routerOptions: { maxParamLength: maxHeaderSize },
    // A path that does not decode is routed as its text, and refused after the guard (validation.ts).
    rewriteUrl: routableUrl,
    // Errors found before routing (a URL that cannot be decoded) skip the hooks: set the id here.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id)
      reply.headers(NOSNIFF)
      sendProblem(request, reply, routerProblem(error as FastifyError))
      metrics.observe(request, reply)
    },
  })
  app.server.on('connect', makeConnectHandler(app))
  limitPipelining(app.server, () => app.log.info({ max: MAX_PIPELINED }, `a connection was closed: more than ${MAX_PIPELINED} requests in flight on it`))
  // Node parses at most 2000 header lines and drops the rest without a word: an Authorization or
  // Idempotency-Key after a thousand filler headers was not seen (found by an attacker review).
  // No count: the headers' total size is bounded anyway (maxHeaderSize, a 431 beyond).
  app.server.maxHeadersCount = 0
  // An Expect Node does not meet goes through the routes like any request, to refuseUnmetExpectation.
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response))
  // Expect: 100-continue too, so that the client is invited to send its body only once the key
  // and the body's size are accepted (refuseBeforeTheBody, below), not before a 401 or a 413.
  app.server.on('checkContinue', (request, response) => app.server.emit('request', request, response))

  const ctx: AppContext = {
    config,
    repos: makeRepos(database.db, config.publicBaseUrl, { deliveriesDue: options.deliveriesDue }),
    markdown:
      options.markdown ??
      new MarkdownRenderer({
        onFallback: (reason) =>
          app.log.warn(
            { reason },
            reason === 'worker_unavailable'
              ? 'a changelog body was stored without HTML: no renderer could start (shown as text until the next start renders it)'
              : 'a changelog body was stored as plain text: its Markdown could not be rendered in bounds',
          ),
      }),
    spec: {
      json: readDocument(documentPaths.partner),
      yaml: readFileSync(documentPaths.partnerYaml, 'utf8'),
      operator: readDocument(documentPaths.operator),
      portal: readDocument(documentPaths.portal),
    },
    ping: () => database.ping(),
    metrics,
    bodyBudgets: { api: options.bodyBudgets?.api ?? bodyBudget(), portal: options.bodyBudgets?.portal ?? bodyBudget() },
    sendWatch: sendWatch({
      windowMs: SEND_WINDOW_MS,
      ...options.sendWatch,
      onSlow: () => {
        metrics.slowAnswer()
        app.log.info('a connection was closed: a large answer on it was read too slowly')
      },
    }),
    lifecycle: { draining: false },
    now: options.now ?? Date.now,
  }

  // Every route the app serves, so that a test can hold it against the spec.
  const served: { method: string; url: string }[] = []
  app.decorate('servedRoutes', served)
  app.decorate('metrics', metrics)
  app.decorate('sendWatch', ctx.sendWatch)
  app.addHook('onClose', () => ctx.markdown.close())
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) served.push({ method, url: route.url })
  })

  app.setValidatorCompiler(validatorCompiler)
  app.addHook('preValidation', async (request) => {
    refuseBadHeaders(request)
    await refuseUndecodableUrl(request)
  })
  registerJsonParser(app, BODY_LIMIT)
  registerFormParser(app, BODY_LIMIT)

  // Registered before the plugins below, whose routes it does not count (rate-limit.ts).
  const limits = await registerRateLimit(app, config, options.now)
  const guard = makeGuard(ctx, limits)
  const keyUsage = makeKeyUsage({
    write: (uses) => ctx.repos.projects.recordKeyUse(uses),
    defer: (uses) => ctx.repos.projects.deferKeyUses(uses),
    takeDeferred: () => ctx.repos.projects.takeDeferredKeyUses(),
    log: app.log,
    now: options.now,
    ...options.keyUsage,
  })
  app.decorate('keyUsage', keyUsage)
  // Written once more on close (SIGTERM), before server.ts closes the pool.
  app.addHook('onClose', () => keyUsage.close())
  app.addHook('onRequest', guard.identify)
  // Draining (app.drain() as SIGTERM begins, then app.close()): every answer still to come says
  // that its connection closes with it. Node closes the connections that are idle when the server
  // closes, but one whose request was in flight stayed open for keep-alive after its answer, so
  // the close never finished: the onClose hooks (the last key uses) and the pool were never
  // closed, and close-with-grace ended the process at 10 s with exit code 1 (found by a
  // deployment review).
  app.decorate('drain', () => {
    ctx.lifecycle.draining = true
  })
  const unfinished = unfinishedRequestSweep(app.server)
  app.addHook('preClose', async () => {
    app.drain()
    unfinished.start()
  })
  app.addHook('onSend', async (request, reply, payload) => {
    if (ctx.lifecycle.draining || closesUninvited(request)) reply.header('connection', 'close')
    reply.header('x-request-id', request.id)
    reply.headers(NOSNIFF)
    const path = routedPath(request)
    if (TESTER_PAGES.test(path)) reply.header('x-robots-tag', 'noindex')
    else if (FEEDS.test(path)) reply.headers(FEED_HEADERS)
    if (request.routeOptions.url === `${DOCS}/` && reply.statusCode === 200 && typeof payload === 'string') reply.header('content-security-policy', docsPolicy(payload))
  })
  app.addHook('onRequestAbort', logClientGone)
  app.addHook('onResponse', async (request, reply) => {
    metrics.observe(request, reply)
    // After the response has gone: a Map set, the database is written by a timer (key-usage.ts).
    if (guard.accepted(request, reply.statusCode)) keyUsage.record(request.credential!.keyHash)
    request.log.info(
      { method: request.method, route: request.routeOptions.url ?? null, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    )
  })

  // An outage is logged as it begins and ends, with what it cost, not once per refused request.
  let outage: { refused: number } | undefined
  const stopWatching = database.onAvailability((event) => {
    if (event.state === 'unreachable') {
      outage = { refused: 0 }
      metrics.outage(true)
      app.log.error({ since: event.since.toISOString(), reason: event.reason }, `database unreachable since ${event.since.toISOString()}: ${event.reason}`)
    } else if (event.state === 'still_unreachable') {
      app.log.warn({ since: event.since.toISOString(), reason: event.reason }, `database still unreachable (since ${event.since.toISOString()}): ${event.reason}`)
    } else {
      const seconds = Math.round(event.downMs / 100) / 10
      const refused = outage?.refused ?? 0
      outage = undefined
      metrics.outage(false)
      app.log.info({ down_s: seconds, refused }, `database reachable again after ${seconds} s, ${refused} requests refused`)
    }
  })
  app.addHook('onClose', async () => stopWatching())

  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    // The client hung up (or was cut off at the request timeout, or its connection closed by the
    // send watch): there is no one to answer, and the onRequestAbort hook has logged it.
    if (isClientGone(request)) {
      // What its answer held of a body budget is given back: it will never be sent.
      request.answerHold?.release()
      return reply.hijack()
    }
    // A 4xx may give way to the key's own 401 or 403, and a 401 to a 429 (guard.ts).
    const problem = await guard.refusal(request, reply, toApiError(error))
    if (problem.options.busy) {
      metrics.busy(problem.options.busy)
      request.log.info({ reason: problem.options.busy }, 'busy')
    } else if (problem.code === 'unavailable') {
      metrics.unavailable(problem.cause, outage !== undefined)
      // During an outage the transitions say it all (above); otherwise one line, without a stack.
      if (outage) outage.refused++
      else if (isStatementTimeout(problem.cause)) request.log.warn({ code: '57014' }, 'a statement ran past DB_STATEMENT_TIMEOUT_MS and was cancelled')
      else request.log.warn({ code: loggableError(error).code }, 'unavailable')
    } else if (problem.status >= 500 && problem.code !== 'not_implemented') {
      request.log.error({ err: loggableError(error) }, problem.code)
    }
    // Fastify's body parser says Connection: close on any error of the body (a 413 before it is
    // read), and Node then closed the socket with the body still arriving: a reset, which a
    // client still writing its body (a proxy) got instead of the 413 (CI's contract step through
    // Prism failed so, once, under load). Node reads and drops the rest of the body itself, as
    // after a 401 sent before the body (connection.ts), and the request timeout bounds that.
    if (!ctx.lifecycle.draining) reply.removeHeader('connection')
    return sendProblem(request, reply, problem)
  })
  // The API reference's own files (its script), paths outside the spec: a wrong method is a 405
  // there too, as on every path the service has (it was a 404).
  const docsAssets = new Map<string, string[]>()
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(`${DOCS}/`) || route.url === `${DOCS}/` || SCALAR_DOCUMENT_COPIES.has(route.url)) return
    docsAssets.set(route.url, [...(docsAssets.get(route.url) ?? []), ...[route.method].flat()])
  })
  app.setNotFoundHandler((request, reply) => sendProblem(request, reply, notFoundOrNotAllowed(request, ctx.config.adminToken !== undefined, docsAssets)))

  await app.register(swagger, { mode: 'static', specification: { document: ctx.spec.json as never } })
  ctx.spec.json = app.swagger()
  await app.register(scalar, {
    routePrefix: DOCS,
    // Scalar's default fonts come from fonts.scalar.com; the page uses the system's instead, so
    // that it loads nothing from elsewhere (see docsPolicy).
    configuration: { url: '/openapi.json', withDefaultFonts: false },
    // The reference takes no query parameters; like every operation, it refuses unknown ones.
    hooks: {
      onRequest: async (request) => {
        // Scalar also serves copies of the document under its prefix; the document has one
        // address, /openapi.json (and .yaml), so these answer like any unknown path.
        if (SCALAR_DOCUMENT_COPIES.has(request.routeOptions.url ?? '')) throw new ApiError('not_found', 'No such resource.')
        refuseUnbuildableUrl(request)
        const names = Object.keys(request.query as object)
        if (names.length) {
          const message = 'is not a parameter of this operation, which takes none'
          const errors = names.slice(0, 100).map((name) => ({ in: 'query' as const, path: `/${pointerToken(name)}`, message }))
          throw new ApiError('validation_failed', `query${errors[0]!.path} ${message}`, { errors })
        }
      },
    },
  })

  registerConditionalRequests(app)
  registerBodyBudget(app, ctx.bodyBudgets, ctx.sendWatch)
  registerIdempotency(app)
  // Before the body is read: 401, 403 and 429 come before 400, 413 and 415.
  app.addHook('preParsing', guard.authorize)
  app.addHook('preParsing', refuseBeforeTheBody)
  registerRoutes(app, ctx, { ...handlers, ...options.handlers }, guard)
  return app
}

