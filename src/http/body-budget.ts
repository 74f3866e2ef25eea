// The memory that answers hold while they are sent. A large answer is held whole from before its
// first byte goes out until its last: the public pages and feeds read up to a megabyte of stored
// HTML an entry, a hundred entries to a page, and the API's lists hold up to a hundred records
// (an event or a changelog entry of 100 000 characters each). A client that stops reading keeps
// it for as long as its connection stays open, and a few such clients could exhaust the heap
// (found by outside reviews: sixteen stalled reads of a 60 MB page ended the process). Each large
// body takes its bytes from the instance's budget, and gives them back when its response closes
// (sent, or its connection gone); a body that would go beyond the budget is a 503 with Retry-After.
// The API and the portal have a budget each, so that anonymous visitors can never take the API's.
// A client reading slowly is cut off only below the minimum rate (send-rate.ts), so one client (an
// API key, or an address on the portal) may hold at most a quarter of a budget beyond its first
// body: filling one takes four clients, or two of the largest pages.
//
// The API's pages of large values are counted before they are read, since a hundred records of
// 600 KB each would be in memory before their answer could be refused (found by an outside
// review: twelve such reads at once raised the process to 1.1 GB). A repository reads a page with
// every large value withheld and its size (db/repos/large-values.ts); when one was, the handler
// holds those bytes (`request.holdAnswer`) before reading it whole. The rest of the answer (its
// small values and other fields: up to a few MB) is counted once the answer is written, and may
// then still be a 503.
import type { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import type { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'
import { isClientGone } from './connection.js'
import { clientAddress } from './rate-limit.js'
import type { SendWatch } from './send-rate.js'

/** Bytes of large bodies an instance may hold at once while sending them: the API's, and the portal's, each. */
export const BODY_BUDGET = 100 * 1024 * 1024

/** The part of the budget one client may hold. */
export const CLIENT_SHARE = 1 / 4

/** A body of fewer bytes is not counted: thousands of them held at once still fit. */
export const COUNTED_BODY_BYTES = 64 * 1024

/** The API's budget (its reads by API key) and the portal's (its pages and feeds). */
export interface BodyBudgets {
  api: BodyBudget
  portal: BodyBudget
}

/** Bytes taken from a budget. */
export interface Hold {
  /** Gives them back; once, however often it is called. */
  release(): void
  /**
   * Holds `bytes` instead: the real size of an answer admitted by an estimate (large-values.ts:
   * the sizes of its large values as sent, short of its other fields). Growing is refused as
   * taking is; shrinking never is.
   */
  resize(bytes: number): void
}

export interface BodyBudget {
  /** Takes `bytes` for `client`: a 503 when they do not fit beside what is held, or beside what the client holds. */
  take(bytes: number, client: string): Hold
  /** Bytes held now, by everyone or by `client`. */
  held(client?: string): number
}

const busy = (detail: string) => new ApiError('unavailable', detail, { headers: { 'retry-after': '5' }, busy: 'large_answers' })

export function bodyBudget(max = BODY_BUDGET): BodyBudget {
  let held = 0
  const byClient = new Map<string, number>()
  /**
   * Refuses a body of `bytes` beside `besides` held by everyone else and `ours` held by its
   * client's other bodies. One body alone may always be sent, whatever its size.
   */
  function admit(bytes: number, besides: number, ours: number): void {
    if (besides > 0 && besides + bytes > max) throw busy('Too many large answers are being sent right now; retry shortly.')
    if (ours > 0 && ours + bytes > max * CLIENT_SHARE) throw busy('Too many large answers are being sent to you right now; read them, then retry.')
  }
  return {
    take(bytes, client) {
      admit(bytes, held, byClient.get(client) ?? 0)
      let holding = 0
      const change = (by: number) => {
        held += by
        const left = (byClient.get(client) ?? 0) + by
        if (left > 0) byClient.set(client, left)
        else byClient.delete(client)
        holding += by
      }
      change(bytes)
      let released = false
      return {
        release() {
          if (released) return
          released = true
          change(-holding)
        },
        resize(bytes) {
          if (released) return
          if (bytes > holding) admit(bytes, held - holding, (byClient.get(client) ?? 0) - holding)
          change(bytes - holding)
        },
      }
    },
    held: (client) => (client === undefined ? held : (byClient.get(client) ?? 0)),
  }
}

/**
 * Takes `bytes` for `client` when a body of that size is counted (COUNTED_BODY_BYTES and more):
 * a small one is never refused, however full the budget is. Undefined when nothing was taken.
 */
export function holdIfLarge(budget: BodyBudget, bytes: number, client: string): Hold | undefined {
  return bytes < COUNTED_BODY_BYTES ? undefined : budget.take(bytes, client)
}

/**
 * Calls `release` once `answer` (a response, or the stream of a page) closes, or its connection
 * does, whichever comes first. A response queued behind another on a pipelined connection is
 * never closed when the connection goes (Node destroys only the requests still arriving), so
 * its bytes would have been held for ever, and a few pipelined reads could fill the budget for
 * good (found by an outside review). An answer whose connection has gone is destroyed.
 */
export function releaseOnClose(release: () => void, answer: EventEmitter & { destroy(): unknown }, connection: Socket): void {
  if (connection.destroyed) {
    answer.destroy()
    return release()
  }
  const waiting = onConnectionClose(connection)
  const done = () => {
    answer.off('close', done)
    waiting.delete(gone)
    release()
  }
  const gone = () => {
    answer.destroy()
    done()
  }
  answer.once('close', done)
  waiting.add(gone)
}

/** What to do when each connection closes: one listener a connection, however many answers it has queued. */
const closing = new WeakMap<Socket, Set<() => void>>()

export function onConnectionClose(connection: Socket): Set<() => void> {
  let waiting = closing.get(connection)
  if (!waiting) {
    const callbacks = new Set<() => void>()
    connection.once('close', () => {
      closing.delete(connection)
      for (const callback of callbacks) callback()
    })
    closing.set(connection, (waiting = callbacks))
  }
  return waiting
}

/**
 * The budget a read counts against: the API's or the portal's. The documents, the metrics and
 * the operator's answers are the deployment's own, and count against neither.
 */
function budgetOf(request: FastifyRequest, budgets: BodyBudgets): BodyBudget | undefined {
  const route = request.routeOptions.config.route
  return route?.tag === 'portal' ? budgets.portal : route?.security === 'ApiKey' ? budgets.api : undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Holds `bytes` of the request's budget for its answer, before the answer is read: a 503
     * when they do not fit. Given back once the answer is sent or its connection closes; the
     * answer's real size replaces them when it is sent.
     */
    holdAnswer(bytes: number): void
    /** What holdAnswer took. */
    answerHold?: Hold
  }
}

/** Whose share a body takes: its API key's, or on the portal its address's (as the rate limit counts it). */
const clientOf = (request: FastifyRequest) => request.credential?.keyHash ?? clientAddress(request)

/**
 * Counts every large body that an API or portal GET writes as text (the API's JSON) against its
 * budget until its response closes, and gives `holdAnswer` to the handlers. Registered after the
 * conditional requests' onSend hook, so that a 304 (which sends nothing) takes nothing. A stream
 * (a portal page or feed) takes its own bytes before it reads them. The answer to a write is never
 * refused: its change is made by then.
 */
export function registerBodyBudget(app: FastifyInstance, budgets: BodyBudgets, watch: SendWatch): void {
  /**
   * A large answer of `bytes` as the send watch streams it (send-rate.ts), with the Content-Length
   * it would have had; to a HEAD, which sends no body, as it is.
   */
  function sentInSlices(request: FastifyRequest, reply: FastifyReply, payload: string, bytes: number): string | Readable {
    if (request.method === 'HEAD') return payload
    reply.header('content-length', String(bytes))
    return watch.stream([payload], request.socket)
  }

  /** Holds `bytes` of the request's budget for its client when they count; undefined when nothing was taken. */
  const holdFor = (request: FastifyRequest, bytes: number): Hold | undefined => {
    const budget = budgetOf(request, budgets)
    return budget && holdIfLarge(budget, bytes, clientOf(request))
  }

  // The hold lasts until the answer's response closes (onSend hands it over), or until the error
  // handler drops an answer nobody waits for (app.ts): not until the connection closes, since the
  // handler goes on reading and writing the answer whether or not its client is still there.
  app.decorateRequest('holdAnswer', function (this: FastifyRequest, bytes: number) {
    // Nothing is read for a client gone already.
    if (isClientGone(this)) throw new ApiError('unavailable', 'The client went away.')
    // Held twice (no handler does today): the first is given back, never held alongside.
    this.answerHold?.release()
    this.answerHold = undefined
    // A small answer is counted, if at all, once it is sent (below).
    this.answerHold = holdFor(this, bytes)
  })

  // A callback hook, not an async one: every answer passes here, and most take nothing.
  app.addHook('onSend', (request, reply, payload, done) => {
    const held = request.answerHold
    // Without a hold, only a GET's text is counted. A character is at most three bytes of UTF-8,
    // so a short body is small without counting. A client gone already holds nothing, and its
    // response will not be closed again.
    if (!held && (request.method !== 'GET' || typeof payload !== 'string' || payload.length * 3 < COUNTED_BODY_BYTES || reply.raw.closed)) {
      return done(null, payload)
    }
    // Its UTF-8 bytes: what the connection holds until the client has read them.
    const bytes = typeof payload === 'string' ? Buffer.byteLength(payload) : 0
    let hold = held
    try {
      // A held answer grows to its real size, or is refused: its problem, sent instead, passes
      // here again and gives back what was held.
      if (hold) hold.resize(bytes)
      else hold = holdFor(request, bytes)
    } catch (error) {
      return done(error as Error)
    }
    // No budget: the deployment's own answers (the documents, /docs/'s 3 MB script, the metrics,
    // the operator's). Still sent in slices under the send watch: a client that does not read holds
    // two slices, not the whole body, and is cut off (found by an attacker review: six hundred
    // unread /docs/js/scalar.js took 6 GB of the heap, without a key).
    if (!hold) return done(null, bytes < COUNTED_BODY_BYTES ? payload : sentInSlices(request, reply, payload as string, bytes))
    releaseOnClose(hold.release, reply.raw, request.socket)
    done(null, bytes < COUNTED_BODY_BYTES ? payload : sentInSlices(request, reply, payload as string, bytes))
  })
}
