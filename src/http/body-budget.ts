// The memory that answers hold while they are sent. A large answer is held whole from before its
// first byte goes out until its last: the public pages and feeds read up to a megabyte of stored
// HTML an entry, a hundred entries to a page, and the API's lists hold up to a hundred records
// (an event or a changelog entry of 100 000 characters each). A client that stops reading keeps
// it for as long as its connection stays open, and a few such clients could exhaust the heap
// (found by outside reviews: sixteen stalled reads of a 60 MB page ended the process). Each large
// body takes its bytes from the instance's budget, and gives them back when its response closes
// (sent, or its connection gone); a body that would go beyond the budget is a 503 with Retry-After.
import type { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { ApiError } from './errors.js'

/** Bytes of large bodies an instance may hold at once while sending them. */
export const BODY_BUDGET = 200 * 1024 * 1024

/** A JSON body shorter than this is not counted: thousands of them held at once still fit. */
export const COUNTED_BODY_LENGTH = 64 * 1024

export interface BodyBudget {
  /** Takes `bytes` (503 when they do not fit beside what is held); returns their release, which may be called more than once. */
  take(bytes: number): () => void
  /** Bytes held now. */
  held(): number
}

export function bodyBudget(max = BODY_BUDGET): BodyBudget {
  let held = 0
  return {
    take(bytes) {
      // One body alone may always be sent, whatever its size.
      if (held > 0 && held + bytes > max) {
        throw new ApiError('unavailable', 'Too many large answers are being sent right now; retry shortly.', { headers: { 'retry-after': '5' } })
      }
      held += bytes
      let released = false
      return () => {
        if (!released) (released = true), (held -= bytes)
      }
    },
    held: () => held,
  }
}

/**
 * Calls `release` once `answer` (a response, or the stream of a page) closes, or its connection
 * does, whichever comes first. A response queued behind another on a pipelined connection is
 * never closed when the connection goes (Node destroys only the requests still arriving), so
 * its bytes would have been held for ever, and a few pipelined reads could fill the budget for
 * good (found by an outside review). An answer whose connection has gone is destroyed.
 */
export function releaseOnClose(release: () => void, answer: EventEmitter & { destroy(): unknown }, connection: Socket): void {
  const done = () => {
    answer.off('close', done)
    connection.off('close', gone)
    release()
  }
  const gone = () => {
    answer.destroy()
    done()
  }
  if (connection.destroyed) return gone()
  answer.once('close', done)
  connection.once('close', gone)
}

/**
 * Counts every large body that a GET writes as text (the API's JSON) against `budget` until its
 * response closes. Registered after the conditional requests' onSend hook, so that a 304 (which
 * sends nothing) takes nothing. A stream (a portal page or feed) takes its own bytes before it
 * reads them. The answer to a write is never refused: its change is made by then.
 */
export function registerBodyBudget(app: FastifyInstance, budget: BodyBudget): void {
  // A callback hook, not an async one: every answer passes here, and most take nothing.
  app.addHook('onSend', (request, reply, payload, done) => {
    // A client gone already holds nothing, and its response will not be closed again.
    if (request.method !== 'GET' || typeof payload !== 'string' || payload.length < COUNTED_BODY_LENGTH || reply.raw.closed) return done(null, payload)
    try {
      // A string's length in UTF-16 units: its size in the heap, to within a factor of two.
      releaseOnClose(budget.take(payload.length), reply.raw, request.socket)
      done(null, payload)
    } catch (error) {
      done(error as Error)
    }
  })
}
