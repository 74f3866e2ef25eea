// Slow and aborted requests (contract §11), against a real listening server and raw sockets:
// a request that has not arrived in full within the request timeout is answered 408 and its
// connection closed; a client that hangs up mid-body is an aborted request logged at info,
// never a database outage. The timeout is configurable, so these tests use 1 s, and every
// bound is generous: nothing here races the clock.
import { connect, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { MAX_PIPELINED } from '../../src/http/connection.js'
import { defaults, type Config } from '../../src/config.js'
import { openDatabase, type DbHandle } from '../../src/db/client.js'
import { call, createProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { schemaProblems } from '../helpers/spec-check.js'

const TIMEOUT_MS = 1000
/** Far beyond the timeout and Node's check interval, however loaded the machine. */
const PATIENCE_MS = 20_000

/** An app listening on a free port, its log lines, and a way to wait for one of them. */
async function listeningApp(t: Test, database: DbHandle, config: Partial<Config> = {}) {
  const lines: Array<Record<string, unknown>> = []
  const waiting: Array<() => void> = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      for (const wake of waiting.splice(0)) wake()
      done()
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'info', requestTimeoutMs: TIMEOUT_MS, ...config }, database, { logger: { stream } })
  t.teardown(() => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  async function logLine(predicate: (line: Record<string, unknown>) => boolean) {
    const deadline = Date.now() + PATIENCE_MS
    for (;;) {
      const found = lines.find(predicate)
      if (found) return found
      if (Date.now() > deadline) throw new Error(`no such log line in:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`)
      await new Promise<void>((resolve) => {
        waiting.push(resolve)
        setTimeout(resolve, 200)
      })
    }
  }
  return { app, port, lines, logLine }
}

/** A raw connection: everything it received, and when the server closed it (or PATIENCE_MS passed). */
function rawConnection(port: number) {
  const socket: Socket = connect(port, '127.0.0.1')
  let received = ''
  socket.on('data', (chunk) => (received += chunk))
  socket.on('error', () => {})
  const closed = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), PATIENCE_MS)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
  return { socket, closed, received: () => received }
}

function parseResponse(raw: string) {
  const [head = '', body = ''] = raw.split('\r\n\r\n')
  const [statusLine = '', ...headerLines] = head.split('\r\n')
  const headers = Object.fromEntries(headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  return { statusLine, headers, body }
}

function checkTimeoutAnswer(t: Test, raw: string, requestId?: string) {
  const res = parseResponse(raw)
  t.match(res.statusLine, /^HTTP\/1\.1 408 /, 'answered 408')
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers.connection, 'close')
  const problem = JSON.parse(res.body)
  t.same(schemaProblems('Problem', problem), [], 'a problem as the spec describes it')
  t.match(problem, { status: 408, code: 'request_timeout', request_id: res.headers['x-request-id'] })
  if (requestId) t.equal(res.headers['x-request-id'], requestId, "the request's own id")
}

t.test('a body trickled a byte at a time is answered 408 after the timeout, and its connection closed', async (t) => {
  const { key } = await createProject()
  const { port, lines, logLine } = await listeningApp(t, await testDatabase())
  const conn = rawConnection(port)
  const started = Date.now()
  conn.socket.write(
    `POST /v1/changelog HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: 100\r\nX-Request-Id: trickle-1\r\n\r\n{"title":`,
  )
  const trickle = setInterval(() => conn.socket.writable && conn.socket.write(' '), 200)
  const closed = await conn.closed
  clearInterval(trickle)
  const elapsed = Date.now() - started
  t.ok(closed, 'the server closed the connection')
  t.ok(elapsed >= TIMEOUT_MS - 50, `not before the timeout (${elapsed} ms)`)
  checkTimeoutAnswer(t, conn.received(), 'trickle-1')
  const line = await logLine((l) => l.request_id === 'trickle-1')
  t.match(line, { level: 30, msg: 'request timed out', status: 408, route: '/v1/changelog' })
  t.notOk(lines.some((l) => (l.level as number) >= 40), 'nothing logged as a warning or an error')
  t.notOk(JSON.stringify(lines).includes(key), 'the key is not logged')
})

t.test('a request answered before its body arrived (a 401) gets no second answer: the timeout closes its connection', async (t) => {
  const { port, lines, logLine } = await listeningApp(t, await testDatabase())
  const conn = rawConnection(port)
  conn.socket.write(
    'POST /v1/changelog HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer fbk_unknownunknownunknownunknownunknown12345\r\n' +
      'Content-Type: application/json\r\nContent-Length: 100\r\nX-Request-Id: early-1\r\n\r\n{"ti',
  )
  t.ok(await conn.closed, 'the server closed the connection after the timeout')
  const answers = conn.received().match(/^HTTP\/1\.1 \d{3}/gm) ?? []
  t.same(answers, ['HTTP/1.1 401'], 'one answer, the 401, and no 408 after it')
  t.match(await logLine((l) => l.request_id === 'early-1' && l.code === 'ERR_HTTP_REQUEST_TIMEOUT'), { level: 30, msg: /never arrived/ })
  t.notOk(lines.some((l) => l.status === 408), 'nothing logged as a 408')
})

t.test('headers trickled a line at a time are answered 408 too', async (t) => {
  const { port, logLine } = await listeningApp(t, await testDatabase())
  const conn = rawConnection(port)
  conn.socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\n')
  const trickle = setInterval(() => conn.socket.writable && conn.socket.write('X-Slow: 1\r\n'), 200)
  const closed = await conn.closed
  clearInterval(trickle)
  t.ok(closed, 'the server closed the connection')
  checkTimeoutAnswer(t, conn.received())
  const id = parseResponse(conn.received()).headers['x-request-id']
  t.match(await logLine((l) => l.request_id === id), { level: 30, status: 408, code: 'request_timeout' })
})

t.test('requests that arrive in time are not affected by the timeout', async (t) => {
  const { port } = await listeningApp(t, await testDatabase())
  // One keep-alive connection, idle between requests for longer than the request timeout.
  const first = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(first.status, 200)
  await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + 300))
  const second = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(second.status, 200)
})

t.test('a client that closes its connection mid-body is logged at info as aborted, not as an outage', async (t) => {
  const { key } = await createProject()
  // A long timeout: the hang-up, not the timeout, ends this request.
  const { port, lines, logLine } = await listeningApp(t, await testDatabase(), { requestTimeoutMs: 60_000 })
  const conn = rawConnection(port)
  // Node answers `100 Continue` as it hands the request to Fastify: from then on it is routed.
  conn.socket.write(
    `POST /v1/changelog HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: 100\r\nExpect: 100-continue\r\nX-Request-Id: hangup-1\r\n\r\n`,
  )
  await new Promise<void>((resolve) => conn.socket.once('data', () => resolve()))
  t.match(conn.received(), /^HTTP\/1\.1 100 /)
  conn.socket.write('{"title": "half a bo')
  conn.socket.destroy()
  const line = await logLine((l) => l.request_id === 'hangup-1')
  t.match(line, { level: 30, msg: 'request aborted', method: 'POST', route: '/v1/changelog' })
  // Whatever the route was doing when the body stopped (looking the key up, reading), it logs
  // nothing more: give it time to.
  await new Promise((resolve) => setTimeout(resolve, 500))
  const all = lines.filter((l) => l.request_id === 'hangup-1')
  t.equal(all.length, 1, 'one line for the request')
  t.notOk(all.some((l) => (l.level as number) >= 40 || 'err' in l || /unavailable/.test(JSON.stringify(l))), 'no error, no stack, no outage')
})

t.test('a routed body that is not valid HTTP is answered 400 and logged as refused, whatever the key', async (t) => {
  const { port, lines, logLine } = await listeningApp(t, await testDatabase())
  const head = (id: string, key: string) =>
    `POST /v1/changelog HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
    `Transfer-Encoding: chunked\r\nX-Request-Id: ${id}\r\n`
  // "zz" is no chunk size. Sent after Node's 100 Continue (the route has begun), and in the same
  // packet as the headers (found by an outside review), with a key that is valid and one that is not.
  const { key } = await createProject()
  const shapes = [
    { id: 'chunk-after-continue', key, continued: true },
    { id: 'chunk-same-packet', key: `fbk_${'u'.repeat(40)}`, continued: false },
  ]
  for (const shape of shapes) {
    const conn = rawConnection(port)
    if (shape.continued) {
      conn.socket.write(`${head(shape.id, shape.key)}Expect: 100-continue\r\n\r\n`)
      await new Promise<void>((resolve) => conn.socket.once('data', () => resolve()))
      conn.socket.write('zz\r\n{}\r\n0\r\n\r\n')
    } else {
      conn.socket.write(`${head(shape.id, shape.key)}\r\nzz\r\n{}\r\n0\r\n\r\n`)
    }
    t.ok(await conn.closed, `${shape.id}: the server closed the connection`)
    const res = parseResponse(conn.received().replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''))
    t.match(res.statusLine, /^HTTP\/1\.1 400 /, `${shape.id}: answered 400`)
    t.equal(res.headers.connection, 'close')
    const problem = JSON.parse(res.body)
    t.same(schemaProblems('Problem', problem), [], 'a problem as the spec describes it')
    t.match(problem, { status: 400, code: 'validation_failed', request_id: shape.id })
    const line = await logLine((l) => l.request_id === shape.id)
    t.match(line, { level: 30, msg: 'request refused: not valid HTTP', status: 400, code: 'validation_failed', route: '/v1/changelog' })
    t.equal(lines.filter((l) => l.request_id === shape.id).length, 1, `${shape.id}: one line, not "request aborted" as well`)
  }
})

t.test('a real database outage is still logged as an error: once, when it begins, with its reason', async (t) => {
  // Nothing listens on port 1: the database refuses every connection.
  const database = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none', connectTimeout: 2 })
  t.teardown(() => database.close())
  const { app, lines, logLine } = await listeningApp(t, database)
  const res = await call(t, app, { url: '/v1/changelog', key: `fbk_${'a'.repeat(40)}`, headers: { 'x-request-id': 'outage-1' } })
  t.equal(res.status, 503)
  t.match(await logLine((l) => /^database unreachable since /.test(String(l.msg))), { level: 50, reason: /ECONNREFUSED/ })
  t.match(await logLine((l) => l.request_id === 'outage-1' && l.msg === 'request'), { level: 30, status: 503 })
  t.same(
    lines.filter((l) => l.request_id === 'outage-1' && Number(l.level) >= 40),
    [],
    'the refused request itself adds no error line (and no stack): the outage line says it',
  )
})

t.test('closing ends the connections whose request has not arrived in full, whatever the request timeout', async (t) => {
  // server.close() stops Node's request-timeout checks: one client that had sent half a request
  // held the close until close-with-grace ended the process, exit code 1 (found by a review).
  const { key } = await createProject()
  const { app, port } = await listeningApp(t, await testDatabase(), { requestTimeoutMs: 3_600_000 })
  const halfHeaders = rawConnection(port)
  halfHeaders.socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\n')
  const halfBody = rawConnection(port)
  halfBody.socket.write(`POST /v1/changelog HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"title":`)
  await Promise.all([halfHeaders, halfBody].map(({ socket }) => new Promise((resolve) => (socket.connecting ? socket.once('connect', resolve) : resolve(undefined)))))
  const closed = await Promise.race([app.close().then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), PATIENCE_MS).unref())])
  t.equal(closed, true, 'the app closed')
  t.same([await halfHeaders.closed, await halfBody.closed], [true, true], 'and ended both connections')
})

t.test('a connection with more requests in flight than MAX_PIPELINED is closed; one within it gets every answer', async (t) => {
  // Node hands every request of a chunk to the server at once: one 64 KB write of GET
  // /openapi.json held an answer each, half a gigabyte, and two ran the heap out (an attacker
  // review, without a key).
  const { port, app, logLine, lines } = await listeningApp(t, await testDatabase())
  const request = 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'
  const deep = rawConnection(port)
  deep.socket.write(request.repeat(Math.floor(65536 / request.length)))
  deep.socket.pause() // reads nothing: every answer would wait
  t.equal(await deep.closed, true, 'the deep connection is closed')
  await logLine((line) => line.msg === `a connection was closed: more than ${MAX_PIPELINED} requests in flight on it`)
  // The requests in flight end as aborted; the rest of the chunk never reached a route.
  t.ok(lines.filter((line) => line.msg === 'request aborted').length <= MAX_PIPELINED, 'a log line for each request in flight at most')
  const within = rawConnection(port)
  within.socket.write(request.repeat(MAX_PIPELINED).replace(/\r\n\r\n$/, '\r\nConnection: close\r\n\r\n'))
  t.equal(await within.closed, true)
  t.equal(within.received().split('HTTP/1.1 200 OK\r\n').length - 1, MAX_PIPELINED, `${MAX_PIPELINED} pipelined: each answered`)
  t.equal((await call(t, app, { url: '/healthz' })).status, 200, 'the server serves on')
})
