// The webhook dispatcher (api-contract §10, "Delivery"): every instance runs one, started and
// stopped by server.ts. It holds no state of its own beyond what is in flight: deliveries are
// rows, claimed with a lease (db/repos/dispatch.ts), so that any number of instances share the
// work, none attempts a delivery another is attempting, and an instance that dies gives its
// claims back when their lease runs out.
//
// When it works: at once when a transaction on this instance made deliveries due (the
// repositories' deliveriesDue hook calls wake()), and every second otherwise, so that a delivery
// written or retried on another instance is attempted within about 2 s; and again as soon as a
// slot may be filled, so that a backlog keeps every slot busy: when an attempt ends (a success's
// outcome is written meanwhile, the claim told not to count it as in flight), when a record
// frees a failed attempt's endpoint or leaves a delivery due again (a retry asked for during its
// attempt), and right after a claim that passed over deliveries another instance was holding at
// that moment (one claim runs at a time: the looks that come while one is under way are one,
// made when it ends).
//
// At most `concurrency` attempts at once on this instance, and on all instances together
// `perEndpoint` to any one endpoint (`perFailingEndpoint` to one whose attempts fail) and
// `perProject` to one project's endpoints (but one to any endpoint with none in flight), so that
// an endpoint that hangs holds a few slots for its 10 s, not all of them, neither its project's
// nor everyone's, and a tenant's endpoints never hold up everyone else's. Outcomes
// are recorded in batches: whatever ended while the previous record was being written goes in
// the next one statement.
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import type { Database, DbHandle } from '../db/client.js'
import { dispatchRepo, type ClaimedDelivery, type Outcome } from '../db/repos/dispatch.js'
import { loggableError, sqlState } from '../db/results.js'
import { DEFAULT_TIMEOUT_MS, Sender, type AttemptKind, type AttemptResult, type Resolver, type Timers } from '../webhooks/send.js'
import { signatureHeaders, type SignatureHeaders } from '../webhooks/sign.js'

export interface DispatchMetrics {
  webhookAttempt(kind: AttemptKind): void
  /** A delivery succeeded, this long after its event was written. */
  webhookDelivered(seconds: number): void
}

export interface WebhookDispatcherOptions {
  db: Database
  config: Pick<Config, 'webhookRetryScheduleMs' | 'webhookAllowPrivateNetworks'>
  log: FastifyBaseLogger
  metrics?: DispatchMetrics
  /** Attempts in flight at most on this instance. */
  concurrency?: number
  /** Attempts in flight at most to one endpoint, all instances together. */
  perEndpoint?: number
  /** Attempts in flight at most to an endpoint whose attempts are failing (failing_since), all instances together. */
  perFailingEndpoint?: number
  /** Attempts in flight at most to one project's endpoints, all instances together. */
  perProject?: number
  /** Milliseconds between two looks for due deliveries when nothing wakes the dispatcher. */
  pollMs?: number
  /** How long a claim holds before another instance may take the delivery over: far longer than an attempt. */
  leaseMs?: number
  /** How long stop() lets attempts in flight finish before it ends them and gives their deliveries back. */
  drainMs?: number
  /** An attempt's deadline (10 s). */
  timeoutMs?: number
  /**
   * Where nothing else keeps the deliveries' statistics (autovacuumRuns): refresh them at start
   * and then at most this often while deliveries change (db/repos/dispatch.ts, analyze).
   */
  analyzeEveryMs?: number
  /** Tests: the names' addresses, the attempts' deadline timers, the jitter, the signatures' clock. */
  resolve?: Resolver
  timers?: Timers
  random?: () => number
  now?: () => Date
}

export interface WebhookDispatcher {
  /** Something is due now: look at once (coalesced with a look already under way). */
  wake(): void
  /**
   * Stops claiming, lets the attempts in flight finish and records them, within drainMs; ends
   * those still running then and gives their deliveries back, due at once for any instance.
   */
  stop(): Promise<void>
}

/**
 * At most 32 attempts at once per instance (a socket and a few KiB each), and on all instances
 * together 8 to one endpoint, 1 to an endpoint that is failing and 8 to one project's endpoints:
 * a burst to a receiver that answers in 50 ms goes at about 160 a second (8 / 0.05 s); an
 * endpoint that hangs holds 8 slots until its first attempts time out, then 1; and a tenant holds
 * 8 of an instance's 32 however many endpoints it has: it takes four tenants whose endpoints all
 * begin to hang at once to fill an instance, and only until those attempts' 10 s deadline.
 */
export const DISPATCH_DEFAULTS = Object.freeze({ concurrency: 32, perEndpoint: 8, perFailingEndpoint: 1, perProject: 8, pollMs: 1000, leaseMs: 60_000, drainMs: 8000 })
/** Each wait of the schedule gets up to this much more, at random, so that failures that came together do not retry together. */
const JITTER = 0.1

/**
 * Milliseconds to wait after a delivery's `attemptsMade`-th attempt failed, from the schedule
 * (WEBHOOK_RETRY_SCHEDULE) with its jitter; undefined once the schedule is spent.
 */
export function retryDelay(attemptsMade: number, schedule: readonly number[], random: () => number = Math.random): number | undefined {
  const wait = schedule[attemptsMade - 1]
  return wait === undefined ? undefined : Math.round(wait * (1 + JITTER * random()))
}

/** What may be logged of a database error: its code, never its message (Drizzle's holds the query and its values). */
const loggable = (error: unknown) => ({ code: sqlState(error) ?? (error as { name?: string } | undefined)?.name })

export function startWebhookDispatcher(options: WebhookDispatcherOptions): WebhookDispatcher {
  const { concurrency, perEndpoint, perFailingEndpoint, perProject, pollMs, leaseMs, drainMs } = { ...DISPATCH_DEFAULTS, ...definedOnly(options) }
  const { log, metrics } = options
  const schedule = options.config.webhookRetryScheduleMs
  const random = options.random ?? Math.random
  const now = options.now ?? (() => new Date())
  const repo = dispatchRepo(options.db)
  const sender = new Sender({ allowPrivateNetworks: options.config.webhookAllowPrivateNetworks, timeoutMs: options.timeoutMs, resolve: options.resolve, timers: options.timers })

  const inFlight = new Map<string, { claim: ClaimedDelivery; abort: AbortController; done: Promise<void> }>()
  let outcomes: (Outcome & { expires: number })[] = []
  const aborted: ClaimedDelivery[] = []
  let claiming: Promise<void> | undefined
  let recording: Promise<void> | undefined
  /** Outcomes in the record being written. */
  let recordingBatch: Outcome[] = []
  /** Woken while a claim was under way: look again when it ends. */
  let again = false
  let stopping: Promise<void> | undefined
  let failing = false
  let changed = true
  let analyzedAt = -Infinity
  let analyzing: Promise<void> | undefined

  function healthy() {
    if (failing) log.info('webhook deliveries: the database answers again')
    failing = false
  }
  function unhealthy(error: unknown, doing: string) {
    // Once per outage, not at every tick; a warning, like the other jobs': the outage's own line is the error.
    if (!failing) log.warn({ err: loggable(error) }, `webhook deliveries: could not ${doing}; trying again every ${pollMs} ms`)
    failing = true
  }
  /** A bug of ours: logged, never a crash of the process. */
  const unexpected = (error: unknown) => log.error({ err: loggableError(error) }, 'webhook deliveries: unexpected error')

  function look(): void {
    if (stopping) return
    if (claiming) {
      again = true
      return
    }
    const room = concurrency - inFlight.size
    if (room <= 0) return
    again = false
    // Attempts that have succeeded free their slots at once, here and in the claim: their
    // outcomes are still being written (their claims hold until then), but they are no longer in
    // flight, and the claim counts them so, so that a healthy endpoint's next delivery goes
    // without waiting for the record. A failed attempt's endpoint waits for its record, which
    // may disable it (410) or leave it one attempt at a time (failing).
    const ended = [...outcomes, ...recordingBatch].filter((o) => o.succeeded).map((o) => o.id)
    claiming = repo
      .claim({ limit: room, ended, perEndpoint, perFailingEndpoint, perProject, leaseMs, attemptMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS })
      .then(
        ({ deliveries: claimed, more }) => {
          healthy()
          // The claim may have been on its way when stop() came: none of these has begun.
          if (claimed.length > 0) changed = true
          if (stopping) aborted.push(...claimed)
          else for (const claim of claimed) begin(claim)
          // It passed over deliveries another instance held at that moment: more may be due.
          if (more) again = true
        },
        (error: unknown) => unhealthy(error, 'claim due deliveries'),
      )
      .finally(() => {
        claiming = undefined
        if (again) look()
      })
      .catch(unexpected)
  }

  function begin(claim: ClaimedDelivery): void {
    const abort = new AbortController()
    const claimedLocally = Date.now()
    const done = attempt(claim, abort.signal)
      .then((result) => {
        if (result === 'aborted') {
          aborted.push(claim)
          return
        }
        metrics?.webhookAttempt(result.kind)
        const succeeded = result.kind === 'succeeded'
        if (succeeded) metrics?.webhookDelivered(Math.max(0, (Date.now() - claim.createdAt.getTime()) / 1000))
        const gone = result.status === 410
        outcomes.push({
          id: claim.id,
          token: claim.token,
          startedAt: claim.claimedAt,
          dueAt: claim.dueAt,
          status: result.status,
          error: result.error,
          succeeded,
          gone,
          retryInMs: succeeded || gone ? null : (retryDelay(claim.attempts + 1, schedule, random) ?? null),
          // Past its lease the claim may be another's: recording it would change nothing.
          expires: claimedLocally + leaseMs,
        })
        void record()
      })
      .catch(unexpected)
      .finally(() => {
        inFlight.delete(claim.id)
        // A slot is free: fill it if more is due.
        look()
      })
    inFlight.set(claim.id, { claim, abort, done })
  }

  /** Signs and sends; resolves whatever happens. */
  async function attempt(claim: ClaimedDelivery, signal: AbortSignal): Promise<AttemptResult | 'aborted'> {
    let headers: SignatureHeaders
    try {
      headers = signatureHeaders(claim.eventId, claim.body, now(), claim.secrets)
    } catch {
      // A secret that is not base64 (none is written so): nothing can be sent, retried as a failure.
      return { kind: 'network', status: null, error: 'the delivery could not be signed' }
    }
    return sender.send({ url: claim.url, headers: { ...headers }, body: claim.body, signal })
  }

  /** Writes the outcomes that have ended, in one statement; one write at a time, the next takes what ended meanwhile. */
  function record(): Promise<void> {
    if (recording) return recording
    const batch = outcomes.filter((o) => o.expires > Date.now())
    outcomes = []
    if (batch.length === 0) return Promise.resolve()
    recordingBatch = batch
    recording = repo
      .record(batch)
      .then(
        (recorded) => {
          recordingBatch = []
          healthy()
          changed = true
          // A failed attempt's endpoint counts it no more; a retry asked for during an attempt
          // left its delivery due now.
          if (batch.some((o) => !o.succeeded) || recorded.deliveries.some((d) => d.status === 'pending')) look()
          for (const endpoint of recorded.disabled) {
            log.warn({ endpoint_id: endpoint.id, reason: endpoint.reason }, `webhook endpoint ${endpoint.id} disabled: ${endpoint.reason === 'gone' ? 'it answered 410 Gone' : 'every attempt to it failed for 5 days'}`)
          }
          // The pending deliveries of those disabled by now wait for them to be enabled again, out
          // of the claim's way (parked in the statement after the record: see Recorded.toPark).
          if (recorded.toPark.length > 0) {
            return repo.park(recorded.toPark).then(
              () => undefined,
              (error: unknown) =>
                log.warn({ err: loggable(error), endpoints: recorded.toPark }, 'webhook deliveries: could not park a disabled endpoint’s deliveries; each claim passes over them until it is enabled'),
            )
          }
        },
        (error: unknown) => {
          // Kept for the next tick; the deliveries stay claimed meanwhile.
          recordingBatch = []
          outcomes.unshift(...batch)
          unhealthy(error, 'record delivery attempts')
        },
      )
      .finally(() => {
        recording = undefined
        if (outcomes.length > 0 && !failing) void record()
      })
      .catch(unexpected)
    return recording
  }

  /** Keeps the claim's plan right where nothing else keeps the statistics (analyzeEveryMs). */
  function analyze(): void {
    const every = options.analyzeEveryMs
    if (every === undefined || analyzing || stopping || !changed || Date.now() - analyzedAt < every) return
    changed = false
    analyzedAt = Date.now()
    analyzing = repo
      .analyze()
      .catch((error: unknown) => unhealthy(error, 'refresh the deliveries’ statistics'))
      .finally(() => (analyzing = undefined))
  }

  const timer = setInterval(() => {
    void record()
    look()
    analyze()
  }, pollMs)
  timer.unref()
  analyze()
  look()

  async function drain(): Promise<void> {
    clearInterval(timer)
    await Promise.all([claiming, analyzing])
    const attempts = [...inFlight.values()]
    if (attempts.length > 0) {
      let expire: NodeJS.Timeout | undefined
      const expired = new Promise<void>((resolve) => (expire = setTimeout(resolve, drainMs)))
      await Promise.race([Promise.all(attempts.map((a) => a.done)), expired])
      clearTimeout(expire)
      for (const attempt of inFlight.values()) attempt.abort.abort()
      await Promise.all(attempts.map((a) => a.done))
    }
    await recording
    await record()
    if (outcomes.length > 0) log.warn({ deliveries: outcomes.length }, 'webhook deliveries: attempts made before the shutdown could not be recorded; they will be made again')
    const release = aborted.splice(0).map((claim) => ({ id: claim.id, token: claim.token }))
    await repo.release(release).catch((error: unknown) => {
      log.warn({ err: loggable(error), deliveries: release.length }, 'webhook deliveries: could not give back unfinished deliveries; they are attempted again once their claim runs out')
    })
    sender.close()
  }

  return {
    wake: look,
    stop() {
      stopping ??= drain()
      return stopping
    },
  }
}

/** The options that were given (an explicit undefined keeps the default). */
function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>
}

/**
 * Whether autovacuum keeps the deliveries' statistics: never on PGlite, and on PostgreSQL only
 * while `autovacuum` is on. Without it the claim is planned for the table as it was when last
 * analyzed: a server on a PostgreSQL with autovacuum off (as some CI machines run it) read every
 * delivery on each claim once the table had grown, and delivered tens a second instead of
 * hundreds. A database that cannot say is taken to run it, as PostgreSQL does by default.
 */
export async function autovacuumRuns(database: DbHandle): Promise<boolean> {
  if (database.kind === 'pglite') return false
  return dispatchRepo(database.db)
    .autovacuumOn()
    .catch(() => true)
}
