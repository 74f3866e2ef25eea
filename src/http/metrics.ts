// Metrics for operators, served by GET /metrics (behind ADMIN_TOKEN) in Prometheus's text
// format, by prom-client.
//
// Every label value comes from a fixed set, so the number of series stays bounded whatever
// clients send: the route is the template the router matched (`/v1/beta/programs/:id`, the same
// value as the request log line's `route`), or `unmatched` for everything the not-found handler
// or the router's own errors answered; the method is one of the few Node's HTTP parser accepts;
// the status, category and credential come from our code. No id, key, token, email or raw path
// is ever a label.
//
// Each app has a registry of its own (tests build several apps in one process), never
// prom-client's global one. The process metrics (collectDefaultMetrics) are the process's, not
// an app's, and some of them start monitors that are never stopped (an event-loop delay
// histogram, a GC observer): they are collected once per process, in a registry of their own,
// and appended to each app's text.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PoolStats } from '../db/client.js'
import { someCause } from '../db/results.js'
import { ATTEMPT_KINDS, type AttemptKind } from '../webhooks/send.js'

/** The route label of a request no route matched (404 and 405 from the not-found handler, a URL the router refused). */
const UNMATCHED = 'unmatched'

/**
 * Which budget a 429 came from (rate-limit.ts): an API key's, a portal client address's, public
 * signup's, an operator operation's, or a client address's failed-authentication budget.
 */
const RATE_LIMIT_CATEGORIES = ['api_key', 'portal_address', 'signup', 'operator', 'auth_failures'] as const
export type RateLimitCategory = (typeof RATE_LIMIT_CATEGORIES)[number]

/**
 * Why a 503 came from this instance and not the database: too many large answers being sent
 * (body-budget.ts), or too many of a project's changelog bodies waiting to be rendered
 * (markdown-rendering.ts).
 */
const BUSY_REASONS = ['large_answers', 'renders', 'shutting_down'] as const
export type BusyReason = (typeof BUSY_REASONS)[number]

/** What a failed authentication presented: an API key (or nothing) on /v1, or a wrong ADMIN_TOKEN. */
const CREDENTIALS = ['api_key', 'admin_token'] as const
export type Credential = (typeof CREDENTIALS)[number]

/**
 * Latency buckets in seconds: a read answers in about a millisecond, and a request waits at most
 * DB_CONNECT_TIMEOUT (5 s by default) for the database before it is answered 503.
 */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * Seconds from an event being written to its delivery succeeding: within 2 s with a healthy
 * receiver (api-contract §10), then the retry schedule's steps (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, ...).
 */
const DELIVERY_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 60, 300, 1800, 7200, 18_000, 36_000, 86_400]

/** SQLSTATE 57014: PostgreSQL cancelled the statement, here always for statement_timeout. */
export const isStatementTimeout = (error: unknown) => someCause(error, (e) => e.code === '57014')

let processRegistry: Registry | undefined
/** The process metrics, collected once per process (see above). */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

export function makeMetrics(poolStats: () => PoolStats, deadlineMisses: () => number = () => 0) {
  const registry = new Registry()
  const registers = [registry]
  const labelNames = ['method', 'route', 'status'] as const

  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered, by method, route template and status.', labelNames, registers })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to sending its response, by method, route template and status.',
    labelNames,
    buckets: DURATION_BUCKETS,
    registers,
  })
  const rateLimited = new Counter({
    name: 'http_rate_limited_total',
    help: 'Requests answered 429 rate_limited, by the budget that ran out: api_key, portal_address, signup, operator or auth_failures (a client address past AUTH_FAILURES_PER_MINUTE).',
    labelNames: ['category'] as const,
    registers,
  })
  const authFailures = new Counter({
    name: 'http_auth_failures_total',
    help: 'Failed authentications (a missing, malformed, unknown or revoked API key; a wrong ADMIN_TOKEN), by credential; those answered 429 past the address budget included.',
    labelNames: ['credential'] as const,
    registers,
  })
  const unavailable = new Counter({
    name: 'db_unavailable_total',
    help: 'Requests answered 503 unavailable because the database could not serve them (unreachable, refusing, or a statement cancelled by its timeout).',
    registers,
  })
  const busy = new Counter({
    name: 'http_busy_total',
    help: "Requests answered 503 unavailable because this instance was busy, not the database: too many large answers being sent (large_answers), too many of a project's changelog bodies waiting to be rendered (renders), or a readiness check while the instance stops (shutting_down).",
    labelNames: ['reason'] as const,
    registers,
  })
  const slowAnswers = new Counter({
    name: 'http_slow_answers_closed_total',
    help: 'Connections closed because a large answer on them moved less than 64 KiB a second over 10 s (a client reading too slowly), and what it held given back.',
    registers,
  })
  const statementTimeouts = new Counter({
    name: 'db_statement_timeouts_total',
    help: 'Statements cancelled by PostgreSQL after DB_STATEMENT_TIMEOUT_MS (SQLSTATE 57014), each answered 503 unavailable.',
    registers,
  })
  const reachable = new Gauge({
    name: 'db_reachable',
    help: 'Whether this instance reaches the database: 0 from a connection error until the database answers again after the cool-down, else 1.',
    registers,
  })
  reachable.set(1)
  const outages = new Counter({ name: 'db_outages_total', help: 'Times the database became unreachable (each logged once, at error level).', registers })
  const refusedInOutage = new Counter({
    name: 'db_outage_refusals_total',
    help: 'Of the 503 unavailable answers, those given while the database was unreachable (the log has one line per outage, not one per refusal).',
    registers,
  })
  new Counter({
    name: 'db_deadline_exceeded_total',
    help: 'Database connections closed because they owed an answer and received nothing for DB_STATEMENT_DEADLINE_MS (a network that stopped carrying bytes).',
    registers,
    collect() {
      this.reset()
      this.inc(deadlineMisses())
    },
  })
  const webhookAttempts = new Counter({
    name: 'webhook_attempts_total',
    help: 'Webhook delivery attempts this instance made, by outcome: succeeded (2xx), http_error (any other answer, 410 and redirects included), timeout (no complete answer within 10 s), network (no connection, reset, TLS, DNS) or blocked (a private or loopback address, refused).',
    labelNames: ['outcome'] as const,
    registers,
  })
  const deliveryLatency = new Histogram({
    name: 'webhook_delivery_latency_seconds',
    help: 'Time from an event being written to its delivery succeeding, retries included, for the deliveries this instance completed.',
    buckets: DELIVERY_BUCKETS,
    registers,
  })
  // Zero from the start, so that rate() and absence alerts see every series before its first event.
  for (const outcome of ATTEMPT_KINDS) webhookAttempts.inc({ outcome }, 0)
  for (const category of RATE_LIMIT_CATEGORIES) rateLimited.inc({ category }, 0)
  for (const credential of CREDENTIALS) authFailures.inc({ credential }, 0)
  for (const reason of BUSY_REASONS) busy.inc({ reason }, 0)

  // Read when scraped, never on a request's path.
  const pool = (name: string, help: string, read: (stats: PoolStats) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read(poolStats()))
      },
    })
  pool('db_pool_connections', 'Connections the database pool may open (DB_POOL_SIZE; 1 for the embedded database).', (s) => s.connections)
  pool(
    'db_pool_slots',
    'Statements or transactions that may run at once: on PostgreSQL 8 pipelined per connection; 1 for the embedded database.',
    (s) => s.slots,
  )
  pool('db_pool_slots_in_use', 'Connections running a statement or holding a transaction now (the embedded database: 1 while busy).', (s) => s.inUse)
  pool(
    'db_pool_waiting',
    'Statements waiting: on PostgreSQL, sent behind another on its connection; on the embedded database, for its one connection.',
    (s) => s.waiting,
  )

  return {
    /** Counts an answered request (the onResponse hook; the router's own errors skip hooks and call it themselves). */
    observe(request: FastifyRequest, reply: FastifyReply): void {
      // One labels object for both: prom-client hashes it, nothing else is allocated here.
      const labels = { method: request.method, route: request.routeOptions.url ?? UNMATCHED, status: reply.statusCode }
      requests.inc(labels)
      duration.observe(labels, reply.elapsedTime / 1000)
    },
    authFailure(credential: Credential): void {
      authFailures.inc({ credential })
    },
    rateLimited(category: RateLimitCategory): void {
      rateLimited.inc({ category })
    },
    /** A 503 unavailable, with the error that caused it, and whether the database was unreachable then. */
    unavailable(cause: unknown, duringOutage = false): void {
      unavailable.inc()
      if (isStatementTimeout(cause)) statementTimeouts.inc()
      if (duringOutage) refusedInOutage.inc()
    },
    /** A 503 unavailable this instance gave because it was busy (the database had nothing to do with it). */
    busy(reason: BusyReason): void {
      busy.inc({ reason })
    },
    /** A connection closed because a large answer on it was read too slowly (http/send-rate.ts). */
    slowAnswer(): void {
      slowAnswers.inc()
    },
    /** The database became unreachable (true) or reachable again (false). */
    outage(down: boolean): void {
      reachable.set(down ? 0 : 1)
      if (down) outages.inc()
    },
    /** A webhook delivery attempt ended (src/jobs/webhook-dispatcher.ts). */
    webhookAttempt(outcome: AttemptKind): void {
      webhookAttempts.inc({ outcome })
    },
    /** A webhook delivery succeeded, `seconds` after its event was written. */
    webhookDelivered(seconds: number): void {
      deliveryLatency.observe(seconds)
    },
    /** The exposition text: this app's metrics, then the process's. */
    async text(): Promise<string> {
      return (await registry.metrics()) + (await processMetrics().metrics())
    },
    contentType: registry.contentType as string,
  }
}

export type Metrics = ReturnType<typeof makeMetrics>
