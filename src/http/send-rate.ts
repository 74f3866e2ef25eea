// The least a large answer must move. The body budget (body-budget.ts) bounds what slow readers
// hold, but a client that reads a little now and then is never idle long enough to be cut off
// (the stall timeout, 60 s of nothing moving), and could keep its share of a budget for as long
// as it likes: four such clients would keep every large page a 503. So a connection sending large
// bodies must move at least MIN_SEND_RATE a second over each window of SEND_WINDOW_MS, or it is
// closed and what its answers held given back. A body is then held for at most its size over
// MIN_SEND_RATE, however slowly it is read: 25 MiB (a client's share) under 7 minutes.
//
// Sizes are known only for what Node has handed to the connection, and Node hands a string over
// in one write, which completes when the last byte is in the kernel's buffers: nothing shows how
// far it has got. So a large body is sent as a stream of slices (at most SLICE_CHARS characters
// each, encoded once), and the stream asks for the next slice only once the connection has taken
// the last: the bytes sliced are the bytes sent, to within two slices. The kernel's own buffers
// (a few MB) fill at once; from then on, what is sliced is what the client reads.
import type { Socket } from 'node:net'
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { onConnectionClose } from './body-budget.js'

/** Bytes a second a large body must move, on average over each window, while it is sent. */
export const MIN_SEND_RATE = 64 * 1024

/** How long a large body is given to move MIN_SEND_RATE × the window's seconds. */
export const SEND_WINDOW_MS = 10_000

/** Characters of a slice: at most 48 KiB of UTF-8, so that two slices in flight are under a sixth of a window's minimum. */
const SLICE_CHARS = 16 * 1024

export interface SendWatch {
  /**
   * `pieces` (a large body) as a stream of slices, watched until it ends or closes: when a
   * window passes in which less than the minimum was sent on `connection`, by all its large
   * bodies together, the connection is closed. A connection is judged from its second check on,
   * so that it has a whole window.
   */
  stream(pieces: Iterable<string>, connection: Socket): Readable
  /** Checks every connection sending a large body: what the timer does each window (tests call it themselves). */
  check(): void
}

export interface SendWatchOptions {
  /** The least a connection must move between two checks; MIN_SEND_RATE for SEND_WINDOW_MS by default. */
  minBytes?: number
  /** The time between checks; undefined runs no timer (a test calls check()). */
  windowMs?: number
  /** Called for each connection closed for moving too slowly. */
  onSlow?: () => void
}

/**
 * A connection sending large bodies: how many, the bytes sliced so far, and at the last check.
 * Counted by connection, not by body: answers pipelined behind another wait for it, and the one
 * being sent moves for them all.
 */
interface Sending {
  bodies: number
  sent: number
  checked: number | undefined
}

export function sendWatch(options: SendWatchOptions = {}): SendWatch {
  const { minBytes = (MIN_SEND_RATE * SEND_WINDOW_MS) / 1000, windowMs, onSlow } = options
  const sending = new Map<Socket, Sending>()
  let timer: NodeJS.Timeout | undefined

  function stopWhenIdle(): void {
    if (sending.size === 0 && timer) {
      clearInterval(timer)
      timer = undefined
    }
  }

  function check(): void {
    for (const [connection, counts] of sending) {
      if (connection.destroyed) sending.delete(connection)
      else if (counts.checked !== undefined && counts.sent - counts.checked < minBytes) {
        sending.delete(connection)
        // (light-my-request's connections, in tests, cannot be closed.)
        if (typeof connection.destroy === 'function') connection.destroy()
        onSlow?.()
      } else counts.checked = counts.sent
    }
    stopWhenIdle()
  }

  async function* slices(pieces: Iterable<string>, counts: Sending): AsyncGenerator<Buffer> {
    for (const piece of pieces) {
      for (let start = 0; start < piece.length; ) {
        let end = Math.min(start + SLICE_CHARS, piece.length)
        // Never between the two halves of a surrogate pair: each slice is encoded on its own.
        if (end < piece.length && isHighSurrogate(piece.charCodeAt(end - 1))) end -= 1
        const slice = Buffer.from(piece.slice(start, end))
        counts.sent += slice.length
        yield slice
        start = end
        // A turn of the event loop after each slice. A connection that takes every slice at once
        // (a fast reader, the kernel's buffers not yet full) would otherwise have the whole body
        // made, escaped and encoded in one go: a feed of twenty 600 KB entries held every other
        // request for over 300 ms (contract §11 allows 100).
        await nextTurn()
      }
    }
  }

  return {
    stream(pieces, connection) {
      let counts = sending.get(connection)
      if (!counts) sending.set(connection, (counts = { bodies: 0, sent: 0, checked: undefined }))
      counts.bodies++
      // Pulled a slice at a time as the connection takes them: the stream buffers one byte (any
      // slice fills it, whatever Node's default), so no more is made until the last has gone.
      const stream = Readable.from(slices(pieces, counts), { objectMode: false, highWaterMark: 1 })
      let ended = false
      const done = () => {
        if (ended) return
        ended = true
        closing.delete(gone)
        if (--counts.bodies === 0 && sending.get(connection) === counts) sending.delete(connection)
        stopWhenIdle()
      }
      // A stream queued behind another answer is never closed when its connection goes.
      const gone = () => {
        stream.destroy()
        done()
      }
      stream.once('end', done).once('close', done)
      const closing = onConnectionClose(connection)
      closing.add(gone)
      if (windowMs !== undefined && !timer) timer = setInterval(check, windowMs).unref()
      return stream
    },
    check,
  }
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff
