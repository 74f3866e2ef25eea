// What happens on the connection itself, beneath the routes: a request that takes too long to
// arrive, headers too large to parse, a client that hangs up mid-request.
import { randomUUID } from 'node:crypto'
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError, problemBody } from './errors.js'

/** Headers every response carries, the raw ones written here included. */
export const NOSNIFF = { 'x-content-type-options': 'nosniff' } as const

/**
 * How often Node looks for requests past the timeout: a timed-out request is answered within
 * `timeout + interval`. Node's default interval is 30 s, which would let a 30 s limit run to 60.
 */
export const checkingInterval = (timeoutMs: number) => Math.min(1000, Math.ceil(timeoutMs / 10))

function connectionProblem(code: string | undefined, timeoutMs: number): ApiError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new ApiError('request_timeout', `The request did not arrive in full within ${timeoutMs / 1000} s.`)
  }
  if (code === 'HPE_HEADER_OVERFLOW') return new ApiError('headers_too_large', 'The request headers are too large.')
  return new ApiError('validation_failed', 'The request is not valid HTTP.')
}

/**
 * Requests a connection may have in flight at once. HTTP/1.1 lets a client send requests before
 * it has read the answers to earlier ones, and Node hands every request of a chunk to the server
 * at once, each answer waiting behind the one before: the 1 680 `GET /openapi.json` of one 64 KB
 * write held half a gigabyte until their client read them (found by an attacker review, without
 * a key). Few clients pipeline at all, and none so deep.
 */
export const MAX_PIPELINED = 16

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void

/**
 * Closes a connection as its request beyond MAX_PIPELINED in flight arrives (`onLimit` first).
 * The requests in flight end as their client's going would end them; that one, and the rest of
 * its chunk, never reach the routes (each would be a log line, a thousand from one write). Wraps
 * the server's request listeners (Fastify's): call it once they are added.
 */
export function limitPipelining(server: Server, onLimit: (socket: Socket) => void): void {
  const handlers = server.listeners('request') as RequestListener[]
  server.removeAllListeners('request')
  const inFlight = new WeakMap<Socket, number>()
  const closed = new WeakSet<Socket>()
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket
    if (closed.has(socket)) return
    const count = (inFlight.get(socket) ?? 0) + 1
    if (count > MAX_PIPELINED) {
      closed.add(socket)
      onLimit(socket)
      socket.destroy()
      return
    }
    inFlight.set(socket, count)
    response.once('close', () => inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1))
    for (const handler of handlers) handler.call(server, request, response)
  })
}

/** Each routed request's id, and the last request routed on each connection. */
export interface RoutedRequests {
  ids: WeakMap<IncomingMessage, string>
  lastOnSocket: WeakMap<Socket, IncomingMessage>
}

/**
 * Fastify's clientErrorHandler: Node's HTTP server found the request late or malformed, before
 * or while a route runs. Answers with a problem (unless a response has begun) and closes the
 * connection. `routed` gives the id of a request already handed to Fastify, so that the answer
 * and the log agree.
 *
 * A request answered before its body arrived (a 401 or a 429 is sent without reading it) has had
 * its one answer: Node goes on reading the body to discard it, and when the rest never comes the
 * timeout closes the connection without a second, unasked-for 408, which a client reusing the
 * connection would take for the answer to its next request (found by an outside review).
 */
export function makeClientErrorHandler(timeoutMs: number, routed: RoutedRequests) {
  // Fastify calls it with the instance as `this`, which is how it reaches the logger.
  return function (this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
    // A connection reset: there is no one left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const problem = connectionProblem(error.code, timeoutMs)
    const response = servedResponse(socket)
    const answered = response ? undefined : routed.lastOnSocket.get(socket)
    if (answered && !answered.complete) {
      this.log.info({ request_id: routed.ids.get(answered), code: error.code }, 'the rest of an answered request never arrived; connection closed')
      socket.destroy()
      return
    }
    if (response?.req.complete && !response.writableFinished) {
      // What failed is a later request, pipelined behind one that arrived whole and is being
      // answered: that one's answer goes out, then the connection closes, and the request that
      // could not be read gets none. It took the first one's answer (a 400 under its id) before
      // (found by a review).
      this.log.info({ request_id: routed.ids.get(response.req), code: error.code }, 'a request pipelined behind this one could not be read; the connection closes after its answer')
      if (!response.headersSent) response.setHeader('connection', 'close')
      response.once('close', () => socket.destroy())
      return
    }
    if (!response) {
      // Before routing: this line is the only trace of the request, and the connection is closed gracefully.
      const id = randomUUID()
      this.log.info({ request_id: id, status: problem.status, code: problem.code }, 'request refused before routing')
      if (socket.writable) return closeAfter(socket, rawProblem(problem, id, beginsHead(error)))
      return void socket.destroy(error)
    }
    // A routed request (logged by logClientGone): answered unless its answer has begun, then
    // destroyed with the error, which ends the request, as its client sends no more anyway.
    const id = routed.ids.get(response.req) ?? randomUUID()
    if (socket.writable && !response.headersSent) {
      socket.write(rawProblem(problem, id, response.req.method === 'HEAD'))
      // The client's end of the stream mid-request is its going away, not a request refused.
      if (error.code !== 'HPE_INVALID_EOF_STATE') refusedMidRequest.set(response.req, problem)
    }
    socket.destroy(error)
  }
}

/**
 * The response a socket is serving, if any. `_httpMessage` is Node's private field (no public way
 * reads a socket's response), which Node's own clientError handler reads the same way
 * (lib/_http_server.js, socketOnError), unchanged on Node 20 and 24 (both in CI). Without it, a
 * body trickled past the timeout gets no 408, and closing waits for a half-sent request:
 * test/http/slow-requests.test.ts.
 */
const servedResponse = (socket: Socket): ServerResponse | undefined => (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage

/**
 * How long a closing server waits for a request that is still arriving (its headers or its body)
 * before it ends the connection, and how often it looks again after that. Within the 10 s a stop
 * has, after SHUTDOWN_DELAY_MS (at most 5 s), for the request's handler to run.
 */
const CLOSING_GRACE_MS = 3000
const CLOSING_SWEEP_MS = 250

/**
 * Once started (as the server closes), gives a request still arriving CLOSING_GRACE_MS to arrive in
 * full, then ends every connection that is not serving a request whose body has all arrived, and
 * again every CLOSING_SWEEP_MS until the server has closed. Such a request would be answered 408
 * by Node's request timeout, but server.close() stops Node's checks, and closing waited for it
 * until close-with-grace ended the process with exit code 1 at 10 s (found by a review: one client
 * that had sent half a request at SIGTERM). A request that arrives in full meanwhile is served,
 * as every request in flight is. Node closes idle connections itself.
 */
export function unfinishedRequestSweep(server: Server): { start(): void } {
  const open = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
  const sweep = () => {
    for (const socket of open) {
      if (!servedResponse(socket)?.req.complete) socket.destroy()
    }
  }
  return {
    start() {
      let timer: NodeJS.Timeout = setTimeout(() => {
        sweep()
        timer = setInterval(sweep, CLOSING_SWEEP_MS)
        timer.unref()
      }, CLOSING_GRACE_MS)
      timer.unref()
      server.once('close', () => clearTimeout(timer))
    },
  }
}

/** How long a connection closed after a raw answer reads and drops what its client still sends. */
const CLOSE_LINGER_MS = 1000

/**
 * Writes `answer` and closes the connection without resetting it: a FIN after the answer, then
 * what the client still sends is read and dropped until it closes its side, or CLOSE_LINGER_MS at
 * most. A socket destroyed with input unread sends a reset, which can reach the client before it
 * has read the answer: on Node 24 every 431 to a 70 KB request was lost so (found when its test
 * ran there). The failed HTTP parser is fed no more.
 */
function closeAfter(socket: Socket, answer: string): void {
  socket.removeAllListeners('data')
  socket.on('data', () => {})
  socket.end(answer)
  const linger = setTimeout(() => socket.destroy(), CLOSE_LINGER_MS)
  linger.unref()
  socket.once('close', () => clearTimeout(linger))
  socket.resume()
}

/**
 * Whether a request refused before routing is a HEAD, whose answer has no body (RFC 9110 §9.3.2):
 * a 431 or a 408 with a body after its headers was "data after Connection: close" to Node's own
 * client (found by a contract fuzz). Known when the bytes the parser failed on begin with the
 * request line; a request whose headers never ended is not known.
 */
function beginsHead(error: NodeJS.ErrnoException & { rawPacket?: Buffer }): boolean {
  return error.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD '
}

/** A problem as a whole HTTP/1.1 response that closes its connection, for a socket no route answers on; without its body for a HEAD. */
function rawProblem(problem: ApiError, id: string, head = false): string {
  const body = JSON.stringify(problemBody(problem, id))
  const headers = {
    ...problem.options.headers,
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': id,
    ...NOSNIFF,
    connection: 'close',
  }
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  return `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n${lines}\r\n${head ? '' : body}`
}

/**
 * The server's `connect` listener. Node hands a CONNECT request to it instead of to Fastify, and
 * closes the connection unanswered when there is none: the service is no proxy, and says so with
 * a 405 whose Allow is empty (its target, `host:port`, names no resource here).
 */
export function makeConnectHandler(app: FastifyInstance) {
  return (_request: IncomingMessage, socket: Socket): void => {
    const id = randomUUID()
    const problem = new ApiError('method_not_allowed', 'CONNECT is not allowed: this service is not a proxy.', { headers: { allow: '' } })
    app.log.info({ request_id: id, status: problem.status, code: problem.code }, 'request refused before routing')
    socket.on('error', () => {})
    socket.end(rawProblem(problem, id))
  }
}

/**
 * Whether nobody is left to answer: the request's own stream was cut off before its end (the
 * client closed the connection mid-request, or the timeout above did), or its connection has
 * closed since (the client hung up, or the send watch closed it: send-rate.ts). Errors that
 * follow from it (the body parser sees ECONNRESET) are no outage, whatever their code says.
 */
export const isClientGone = (request: FastifyRequest): boolean => request.raw.readableAborted || request.socket.destroyed === true

/**
 * The routed requests the HTTP layer answered itself while they were still arriving (a 408, or a
 * 400 for a body that is not valid HTTP, such as a chunk size that is not hexadecimal), with that
 * answer: their client did not go away, and their log line says what they were answered.
 */
const refusedMidRequest = new WeakMap<IncomingMessage, ApiError>()

/**
 * Fastify's onRequestAbort hook: the one log line of a request that ended before its route
 * answered, at info and without a stack: its client went away, or the HTTP layer refused it (then
 * with the status and code it was answered). It runs whether or not the route had begun to read
 * the body. A refused body logged "request aborted" with no status before (found by a review).
 */
export async function logClientGone(request: FastifyRequest): Promise<void> {
  const route = { method: request.method, route: request.routeOptions.url ?? null }
  const problem = refusedMidRequest.get(request.raw)
  if (!problem) return void request.log.info({ ...route, status: null }, 'request aborted')
  const message = problem.code === 'request_timeout' ? 'request timed out' : 'request refused: not valid HTTP'
  request.log.info({ ...route, status: problem.status, code: problem.code }, message)
}
