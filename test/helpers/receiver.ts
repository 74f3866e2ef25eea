// A webhook receiver on 127.0.0.1 for the delivery tests: it records every request it gets and
// answers as the test tells it, well or badly (a status, a redirect, never, slowly, without
// end, or by resetting the connection). Nothing here waits against the clock: a test waits for
// the requests it expects (`received`), and the misbehaviours last until the caller gives up.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { fileTeardown } from './folder-suite.js'

export type Behaviour =
  /** Answers this status, at once or after `delayMs` (a 302 with `location`). */
  | { status: number; location?: string; delayMs?: number }
  /** Never answers. */
  | 'hang'
  /** Holds the request until the test calls release() (the shutdown tests). */
  | 'hold'
  /** Answers 200 at once, then sends its body a byte every 50 ms, without end. */
  | 'slow'
  /** Writes the head of an answer of this status at once, then nothing: its body never comes (resetOpen() ends it). */
  | { head: number }
  /** Answers 200 with a body that never ends, as fast as the client reads it. */
  | 'huge'
  /** Resets the connection once the request has arrived. */
  | 'reset'
  /** Answers 200, but resets a kept-alive connection when a second request comes on it. */
  | 'reset-reused'
  /** Decides for each request as it arrives (the requests before it are in `requests`). */
  | ((request: Received) => Behaviour)

export interface Received {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: string
  /** performance.now() when the request had arrived in full. */
  at: number
  /** performance.now() when its exchange ended (answered, or the connection closed); undefined while open. */
  closed?: number
  /** performance.now() just before its answer's status was written: no client can have read the answer earlier. */
  answeredAt?: number
  /** The status it was answered with; undefined while unanswered (or never answered). */
  status?: number
  /** Which of the receiver's connections it came on (1, 2, ...). */
  connection: number
  /** The client's port of that connection (which process made it: the tests of several instances). */
  remotePort: number
}

export interface Receiver {
  /** http://127.0.0.1:<port>/hook */
  url: string
  port: number
  requests: Received[]
  /** Connections the receiver accepted. */
  connections(): number
  /** Bytes of a `huge` body written so far, over all requests. */
  hugeBytes(): number
  /** Requests now open (arrived, not yet answered in full nor closed). */
  open(): number
  answer(behaviour: Behaviour): void
  /** Resolves once `count` requests have arrived. */
  received(count: number): Promise<Received[]>
  /** Answers every held request 200, or those `which` picks. */
  release(which?: (request: Received) => boolean): void
  /** Resets the connection of every request still open. */
  resetOpen(): void
  close(): Promise<void>
}

/** Starts a receiver, closed when the test file ends. */
export async function startReceiver(behaviour: Behaviour = { status: 200 }): Promise<Receiver> {
  let current = behaviour
  const requests: Received[] = []
  const waiters: { count: number; resolve: () => void }[] = []
  const held: { res: ServerResponse; received: Received }[] = []
  const opened = new Set<ServerResponse>()
  const sockets = new Set<Socket>()
  const connectionOf = new WeakMap<Socket, { number: number; served: number }>()
  let connections = 0
  let hugeBytes = 0
  let open = 0

  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const connection = connectionOf.get(req.socket)!
      connection.served++
      const received: Received = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
        connection: connection.number,
        remotePort: req.socket.remotePort!,
      }
      requests.push(received)
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
      open++
      res.on('close', () => {
        open--
        received.closed = performance.now()
      })
      respond(current, res, received, connection.served)
    })
  })

  /** Writes the answer's head, noting when and with what status. */
  function answerWith(res: ServerResponse, received: Received, status: number, headers: Record<string, string>): ServerResponse {
    received.answeredAt = performance.now()
    received.status = status
    return res.writeHead(status, headers)
  }

  function respond(behaviour: Behaviour, res: ServerResponse, received: Received, served: number): void {
    if (typeof behaviour === 'function') return respond(behaviour(received), res, received, served)
    if (behaviour === 'hang') return
    if (behaviour === 'hold') {
      held.push({ res, received })
      return
    }
    if (behaviour === 'reset' || (behaviour === 'reset-reused' && served > 1)) {
      res.socket?.resetAndDestroy()
      return
    }
    if (typeof behaviour === 'object' && 'head' in behaviour) {
      answerWith(res, received, behaviour.head, { 'content-type': 'text/plain', 'content-length': '100' }).flushHeaders()
      opened.add(res)
      res.on('close', () => opened.delete(res))
      return
    }
    if (behaviour === 'reset-reused') {
      answerWith(res, received, 200, { 'content-type': 'text/plain' }).end('ok')
      return
    }
    if (behaviour === 'slow') {
      answerWith(res, received, 200, { 'content-type': 'text/plain' }).flushHeaders()
      const timer = setInterval(() => res.write('.'), 50)
      res.on('close', () => clearInterval(timer))
      return
    }
    if (behaviour === 'huge') {
      answerWith(res, received, 200, { 'content-type': 'text/plain' })
      const chunk = Buffer.alloc(64 * 1024, 'x')
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) hugeBytes += chunk.length
        if (!res.destroyed) hugeBytes += chunk.length
      }
      res.on('drain', pump)
      pump()
      return
    }
    const answer = () =>
      answerWith(res, received, behaviour.status, { 'content-type': 'text/plain', ...(behaviour.location ? { location: behaviour.location } : {}) }).end(`status ${behaviour.status}`)
    // A delayed answer to a client that has gone meanwhile is none.
    if (behaviour.delayMs) setTimeout(() => res.destroyed || answer(), behaviour.delayMs)
    else answer()
  }

  server.on('connection', (socket) => {
    sockets.add(socket)
    connectionOf.set(socket, { number: ++connections, served: 0 })
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    requests,
    connections: () => connections,
    hugeBytes: () => hugeBytes,
    open: () => open,
    answer(next) {
      current = next
    },
    received(count) {
      if (requests.length >= count) return Promise.resolve(requests.slice())
      return new Promise((resolve) => waiters.push({ count, resolve: () => resolve(requests.slice()) }))
    },
    release(which = () => true) {
      for (const h of held.filter((h) => which(h.received))) {
        held.splice(held.indexOf(h), 1)
        // One whose connection has gone (its sender died) has nothing to answer.
        if (!h.res.destroyed) answerWith(h.res, h.received, 200, { 'content-type': 'text/plain' }).end('ok')
      }
    },
    resetOpen() {
      for (const res of opened) res.socket?.resetAndDestroy()
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  fileTeardown(() => receiver.close())
  return receiver
}
