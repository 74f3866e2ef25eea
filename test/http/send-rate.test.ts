// A large answer is sent in slices, and a client that reads it too slowly has its connection
// closed (src/http/send-rate.ts). The checks run when the test says, never on a timer; the
// server side, with real connections, is in test/http/body-budget.test.ts.
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import type { Readable } from 'node:stream'
import t from 'tap'
import { MIN_SEND_RATE, SEND_WINDOW_MS, sendWatch } from '../../src/http/send-rate.js'

/** A connection that notes whether it was closed. */
class FakeConnection extends EventEmitter {
  destroyed = false
  destroy() {
    this.destroyed = true
    this.emit('close')
  }
}
function connection() {
  const socket = new FakeConnection()
  return { state: socket, socket: socket as unknown as Socket }
}

/** Reads what the stream has ready, up to `bytes` (or all), as the connection taking it would. */
function take(stream: Readable, bytes = Infinity): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const next = () => {
      let chunk: Buffer | null
      while (Buffer.byteLength(text) < bytes && (chunk = stream.read()) !== null) text += chunk.toString()
      if (Buffer.byteLength(text) >= bytes || stream.readableEnded) return resolve(text)
      stream.once('readable', next)
    }
    stream.once('end', () => resolve(text))
    next()
  })
}

t.test('a body comes out whole, in slices that never split a character', async (t) => {
  // Surrogate pairs everywhere, so that some fall on a slice's edge whatever its size.
  const body = 'a' + '😀'.repeat(100_000) + 'é'.repeat(70_000)
  const watch = sendWatch()
  const stream = watch.stream(['{', body, '}'], connection().socket)
  // As the connection gets them: bytes, each slice encoded on its own.
  const slices: Buffer[] = []
  for await (const slice of stream) slices.push(slice as Buffer)
  t.ok(slices.length > 3, `in slices (${slices.length})`)
  t.equal(Buffer.concat(slices).toString(), `{${body}}`, 'the same text: no slice holds half a character')
})

t.test('a body read as fast as it is made still lets the event loop turn after every slice', async (t) => {
  // A reader that takes every slice at once (a fast client, the kernel's buffers not yet full)
  // pulled the whole body in one go: a feed of twenty 600 KB entries held every other request
  // for over 300 ms (found by an outside review; contract §11 allows 100). Counted, not timed:
  // a chain of setImmediate callbacks runs between any two slices.
  const stream = sendWatch().stream(Array.from({ length: 20 }, () => 'x'.repeat(100_000)), connection().socket)
  let turns = 0
  let ended = false
  const turn = () => {
    turns++
    if (!ended) setImmediate(turn)
  }
  setImmediate(turn)
  const seen: number[] = []
  stream.on('data', () => seen.push(turns))
  await new Promise((resolve) => stream.on('end', resolve))
  ended = true
  t.ok(seen.length > 100, `in slices (${seen.length})`)
  const together = seen.filter((at, i) => i > 0 && at === seen[i - 1]).length
  t.equal(together, 0, 'no two slices without a turn of the event loop between them')
})

t.test(`a body must move ${MIN_SEND_RATE / 1024} KiB a second over each window of ${SEND_WINDOW_MS / 1000} s, judged from its second check`, async (t) => {
  const slow: string[] = []
  const watch = sendWatch({ minBytes: 200_000, onSlow: () => slow.push('closed') })
  const body = 'x'.repeat(2_000_000)

  const moving = connection()
  const read = watch.stream([body], moving.socket)
  const stalled = connection()
  watch.stream([body], stalled.socket) // never read

  watch.check()
  t.same([moving.state.destroyed, stalled.state.destroyed], [false, false], 'nothing is judged at its first check: a body has a whole window')
  await take(read, 300_000)
  watch.check()
  t.same([moving.state.destroyed, stalled.state.destroyed], [false, true], 'a window with nothing sent closes the connection; one with enough does not')
  t.same(slow, ['closed'], 'and says so once')

  await take(read, 50_000)
  watch.check()
  t.equal(moving.state.destroyed, true, 'a window with too little sent closes it too')
  t.same(slow, ['closed', 'closed'])
})

t.test('a connection is closed once, however many of its bodies are too slow', async (t) => {
  const slow: string[] = []
  const watch = sendWatch({ minBytes: 1, onSlow: () => slow.push('closed') })
  const { state, socket } = connection()
  for (let i = 0; i < 3; i++) watch.stream(['x'.repeat(100_000)], socket) // pipelined, none read
  watch.check()
  watch.check()
  t.same([state.destroyed, slow], [true, ['closed']])
})

t.test('bodies pipelined on one connection are judged together: the one being sent moves for those waiting', async (t) => {
  const watch = sendWatch({ minBytes: 200_000 })
  const { state, socket } = connection()
  const first = watch.stream(['x'.repeat(2_000_000)], socket)
  watch.stream(['x'.repeat(2_000_000)], socket) // queued behind the first: nothing of it moves yet
  watch.check()
  await take(first, 300_000)
  watch.check()
  t.equal(state.destroyed, false, 'the connection moved enough')
})

t.test('a body sent in full, or closed, is no longer watched', async (t) => {
  const watch = sendWatch({ minBytes: 1 })
  const sent = connection()
  const stream = watch.stream(['x'.repeat(100_000)], sent.socket)
  watch.check()
  t.equal((await take(stream)).length, 100_000)
  watch.check()
  watch.check()
  t.equal(sent.state.destroyed, false, 'its connection is left open for the next request')

  const closed = connection()
  const gone = watch.stream(['x'.repeat(100_000)], closed.socket)
  watch.check()
  gone.destroy()
  await new Promise((resolve) => gone.once('close', resolve))
  watch.check()
  t.equal(closed.state.destroyed, false, 'a body whose stream closed is not judged')

  // A body queued behind another answer is never closed by Node when its connection goes.
  const slow: string[] = []
  const watch2 = sendWatch({ minBytes: 1, onSlow: () => slow.push('closed') })
  const queued = connection()
  const waiting = watch2.stream(['x'.repeat(100_000)], queued.socket)
  watch2.check()
  queued.socket.emit('close')
  t.equal(waiting.destroyed, true, "a body's stream is destroyed when its connection closes")
  watch2.check()
  t.same(slow, [], 'and no longer judged')
})
