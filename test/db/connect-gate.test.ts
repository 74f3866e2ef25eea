// The connect gate (src/db/gate.ts), driven by hand: fake sockets that record what the driver
// sends and deliver what a server would answer, and a clock that moves only when told, so no
// assertion depends on how fast this machine is.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Duplex } from 'node:stream'
import { TLSSocket } from 'node:tls'
import t, { type Test } from 'tap'
import { ConnectGate, COOL_DOWN_MS, type Availability } from '../../src/db/gate.js'
import { ManualClock } from '../helpers/clock.js'

/** A socket as the driver sees it: what is written is kept; `answer` delivers server bytes. */
class FakeSocket extends Duplex {
  written: Buffer[] = []
  keepAlive: [boolean, number] | undefined
  override _write(chunk: Buffer, _encoding: string, callback: () => void) {
    this.written.push(chunk)
    callback()
  }
  override _read() {}
  answer(bytes: Buffer) {
    this.emit('data', bytes)
  }
  setKeepAlive(enable: boolean, delay: number) {
    this.keepAlive = [enable, delay]
    return this
  }
}

const message = (type: string, body: Buffer = Buffer.alloc(0)) => {
  const header = Buffer.alloc(5)
  header.write(type, 0, 'latin1')
  header.writeUInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}
const startup = () => {
  const body = Buffer.from('\0\x03\0\0user\0postgres\0\0', 'latin1')
  const length = Buffer.alloc(4)
  length.writeUInt32BE(body.length + 4)
  return Buffer.concat([length, body])
}
const ready = (status = 'I') => message('Z', Buffer.from(status, 'latin1'))
const sync = () => message('S')
const fatal = (code: string) => message('E', Buffer.from(`SFATAL\0C${code}\0Mbye\0\0`, 'latin1'))
const tick = () => new Promise((resolve) => setImmediate(resolve))

const DEADLINE = 6000

function setup() {
  const clock = new ManualClock()
  const sockets: FakeSocket[] = []
  const targets: unknown[] = []
  const gate = new ConnectGate({
    statementDeadlineMs: DEADLINE,
    connectTimeoutMs: 5000,
    keepAliveMs: 10_000,
    clock,
    connect: (target) => {
      targets.push(target)
      const socket = new FakeSocket()
      socket.on('error', () => {}) // the driver's listener, in production
      sockets.push(socket)
      return socket as unknown as Socket
    },
  })
  const events: Availability[] = []
  gate.onAvailability((event) => events.push(event))
  /** A connection through the gate, started as the driver starts one. */
  const open = () => {
    const socket = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
    socket.write(startup())
    socket.answer(ready())
    return socket
  }
  /** What the gate hands the driver during a cool-down: a socket that fails at once. */
  const refusedCode = async () => {
    const socket = gate.socket({ host: ['db'], port: [5432] }) as Socket
    const error = new Promise<string | undefined>((resolve) => socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code)))
    await tick()
    return error
  }
  return { clock, gate, sockets, targets, events, open, refusedCode }
}

t.test('every connection has TCP keep-alive', async (t) => {
  const { open, targets } = setup()
  const socket = open()
  t.same(socket.keepAlive, [true, 10_000])
  t.same(targets, [{ host: 'db', port: 5432 }])
})

t.test('a connection that owes an answer and hears nothing for the deadline is destroyed, and the gate trips', async (t) => {
  const { clock, gate, open, events } = setup()
  const socket = open()
  const failed = new Promise<NodeJS.ErrnoException>((resolve) => socket.once('error', resolve))
  socket.write(sync())
  clock.advance(DEADLINE - 1)
  t.notOk(socket.destroyed, 'a statement may run up to the deadline (more than statement_timeout)')
  socket.answer(message('D', Buffer.from('\0\0'))) // a row: progress restarts the deadline
  clock.advance(DEADLINE - 1)
  t.notOk(socket.destroyed, 'the deadline counts from the last bytes received')
  clock.advance(1)
  t.ok(socket.destroyed, 'silent for the whole deadline: destroyed, never reused')
  t.equal((await failed).code, '08006', 'its statements fail with a connection error (503)')
  t.equal(gate.deadlineMisses, 1)
  t.match(events, [{ state: 'unreachable', reason: /no answer within 6000 ms/ }])
})

t.test('a new connection PostgreSQL does not answer within the connect timeout is destroyed, on the gate\'s clock', async (t) => {
  const { clock, gate, sockets, events } = setup()
  const silent = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
  const failed = new Promise<NodeJS.ErrnoException>((resolve) => silent.once('error', resolve))
  silent.write(startup())
  clock.advance(4999)
  t.notOk(silent.destroyed, 'the startup may take up to the connect timeout')
  clock.advance(1)
  t.ok(silent.destroyed, 'no ReadyForQuery within it: destroyed')
  t.equal((await failed).code, 'CONNECT_TIMEOUT', 'its statements fail with the driver\'s own code for it (503)')
  await tick()
  t.match(events, [{ state: 'unreachable', reason: 'no answer to a new connection within DB_CONNECT_TIMEOUT' }])
  t.notOk(gate.reachable)

  clock.advance(COOL_DOWN_MS)
  const started = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
  t.equal(sockets.length, 2, 'after the cool-down, one attempt probes')
  started.write(startup())
  clock.advance(4000)
  started.answer(ready())
  t.notOk(started.destroyed, 'it started in time')
  started.write(sync())
  started.answer(ready())
  t.ok(gate.reachable, 'its first statement answered: reachable again')
  clock.advance(10 * DEADLINE)
  t.notOk(started.destroyed, 'a started connection has no startup deadline left, idle for ever')
})

t.test('a statement pipelined behind an answered one is still watched', async (t) => {
  const { clock, open } = setup()
  const socket = open()
  socket.write(Buffer.concat([sync(), sync()]))
  clock.advance(1000)
  socket.answer(ready())
  clock.advance(DEADLINE)
  t.ok(socket.destroyed, 'the second answer never came')
})

t.test("a statement's first step (Parse, Describe, Flush) sent behind an answered statement is still watched", async (t) => {
  // An unnamed statement with parameters asks for its parameters' types first; that answer ends
  // with no ReadyForQuery. The statement before it answering must not make the connection idle.
  const firstStep = () => Buffer.concat([message('P', Buffer.from('\0select $1\0\0\0', 'latin1')), message('D', Buffer.from('S\0', 'latin1')), message('H')])
  for (const answered of [false, true]) {
    const { clock, open } = setup()
    const socket = open()
    socket.on('error', () => {})
    socket.write(sync())
    socket.write(firstStep())
    socket.answer(ready())
    if (answered) socket.answer(Buffer.concat([message('1'), message('t', Buffer.from('\0\x01\0\0\0\x17', 'latin1')), message('n')]))
    clock.advance(DEADLINE)
    if (answered) t.notOk(socket.destroyed, 'its answer came: the connection owes nothing')
    else t.ok(socket.destroyed, 'its answer never came: destroyed at the deadline')
  }
})

t.test('idle connections, inside a transaction or not, are never destroyed by the deadline', async (t) => {
  const { clock, open, gate } = setup()
  const idle = open()
  const inTransaction = open()
  inTransaction.write(sync())
  inTransaction.answer(ready('T'))
  clock.advance(10 * DEADLINE)
  t.notOk(idle.destroyed)
  t.notOk(inTransaction.destroyed)
  t.same(gate.stats(), { inUse: 1, waiting: 0 }, 'the open transaction holds its connection')
})

t.test("the readiness check's connection (unpooledSocket) is left out of the pool's stats, and trips the gate as any other", async (t) => {
  const { gate, events } = setup()
  const readiness = gate.unpooledSocket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
  readiness.write(startup())
  readiness.answer(ready())
  readiness.write(sync())
  t.same(gate.stats(), { inUse: 0, waiting: 0 }, 'a select 1 in flight is no pooled connection in use')
  readiness.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
  await tick()
  t.match(events, [{ state: 'unreachable', reason: 'connection lost (ECONNRESET)' }])
})

t.test('a reset trips the gate: refused at once for the cool-down, then one probe; its answer ends the outage', async (t) => {
  const { clock, gate, open, sockets, events, refusedCode } = setup()
  const idle = open()
  const busy = open()
  busy.write(sync())
  busy.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
  await tick()
  t.match(events, [{ state: 'unreachable', reason: 'connection lost (ECONNRESET)' }], 'the transition, with its reason')
  t.notOk(gate.reachable)
  t.ok(idle.destroyed, 'idle connections are closed: they may be as dead as the one that failed')
  const opened = sockets.length
  t.equal(await refusedCode(), '08001', 'during the cool-down a new connection fails at once (503)')
  t.equal(sockets.length, opened, 'without a connection attempt')

  clock.advance(COOL_DOWN_MS)
  const probe = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
  t.equal(sockets.length, opened + 1, 'after the cool-down one attempt probes')
  t.equal(await refusedCode(), '08001', 'others are refused while it is out')
  clock.advance(2500)
  probe.write(startup())
  probe.answer(ready())
  t.notOk(gate.reachable, 'a startup alone proves nothing: a pooler completes it for a PostgreSQL that is down')
  probe.write(sync())
  probe.answer(ready())
  t.ok(gate.reachable, "PostgreSQL answered the probe's statement")
  t.match(events[1], { state: 'reachable', downMs: COOL_DOWN_MS + 2500 })
  open()
  t.equal(sockets.length, opened + 2, 'connections are opened freely again')
})

t.test('behind a pooler: a startup answered while PostgreSQL is down does not end the outage', async (t) => {
  // PgBouncer completes a client's startup itself; the statement then fails (the pooler could
  // not reach PostgreSQL) and the connection closes. Counted as an answer, each such startup
  // ended the outage and the close started it again, a pair of log lines a second.
  const { clock, gate, open, events } = setup()
  const busy = open()
  busy.write(sync())
  busy.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
  await tick()
  for (let attempt = 0; attempt < 3; attempt++) {
    clock.advance(COOL_DOWN_MS)
    const probe = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
    probe.write(startup())
    probe.answer(ready())
    probe.write(sync())
    probe.answer(fatal('08P01'))
    probe.destroy()
    await tick()
  }
  t.notOk(gate.reachable)
  t.same(events.map((e) => e.state), ['unreachable', 'still_unreachable'], 'one outage, still going: no reachable-again in between')
  t.match(events[1], { reason: 'connection lost (08P01)' }, 'what the probes met, said once')
  clock.advance(COOL_DOWN_MS)
  const probe = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
  probe.write(startup())
  probe.answer(ready())
  probe.write(sync())
  probe.answer(ready())
  t.ok(gate.reachable, 'a statement answered: reachable again')
  t.same(events.map((e) => e.state), ['unreachable', 'still_unreachable', 'reachable'], 'one line down, one up')
})

t.test('answers on old connections during the cool-down do not end the outage; one after it does', async (t) => {
  const { clock, gate, open, events } = setup()
  const survivor = open()
  const victim = open()
  victim.answer(fatal('57P01')) // pg_terminate_backend
  victim.destroy()
  await tick()
  t.notOk(gate.reachable)
  t.match(events, [{ state: 'unreachable', reason: 'connection lost (57P01)' }])
  clock.advance(COOL_DOWN_MS - 1)
  survivor.answer(ready())
  t.notOk(gate.reachable, 'an answer within the cool-down: still an outage (no flapping in the log)')
  t.equal(events.length, 1)
  clock.advance(1)
  survivor.answer(ready())
  t.ok(gate.reachable, 'an answer after it: reachable again')
  t.equal(events.length, 2, 'one line down, one line up')
})

t.test('connect failures trip: refused, silent (no answer to the startup), server starting up', async (t) => {
  for (const [label, fail, reason] of [
    ['refused', (s: FakeSocket) => s.destroy(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })), 'cannot connect (ECONNREFUSED)'],
    ['silent', (s: FakeSocket) => s.destroy(), 'no answer to a new connection within DB_CONNECT_TIMEOUT'],
    ['starting up', (s: FakeSocket) => (s.answer(fatal('57P03')), s.destroy()), 'PostgreSQL refused the connection (57P03)'],
  ] as const) {
    const { gate, events } = setup()
    const socket = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
    socket.write(startup())
    fail(socket)
    await tick()
    t.match(events, [{ state: 'unreachable', reason }], label)
  }
})

t.test('a FATAL error trips the gate as it arrives, before the driver reads it; an ERROR does not', async (t) => {
  // Counted at the close, a connection refused with 55000 (or ended with 57P01) failed its
  // statements first, and their 503s were each logged as if no outage had begun (found by CI's
  // fault tests once /readyz had a connection of its own).
  for (const [label, fail, reason] of [
    ['ended by an administrator', (s: FakeSocket) => s.answer(fatal('57P01')), 'connection lost (57P01)'],
    ['refused at startup', (s: FakeSocket) => s.answer(fatal('55000')), 'PostgreSQL refused the connection (55000)'],
  ] as const) {
    const { gate, events } = setup()
    const socket = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
    socket.write(startup())
    if (label === 'ended by an administrator') socket.answer(ready())
    // The driver's listener comes after the gate's, as postgres.js adds it to the socket the gate made.
    const seenByDriver: number[] = []
    socket.on('data', () => seenByDriver.push(events.length))
    fail(socket)
    t.same(seenByDriver, [1], `${label}: the outage had begun when the driver read the error`)
    t.match(events, [{ state: 'unreachable', reason }], label)
  }
  const { open, events } = setup()
  const socket = open()
  socket.write(sync())
  socket.answer(message('E', Buffer.from('SERROR\0VERROR\0C23505\0Mduplicate\0\0', 'latin1')))
  socket.answer(ready())
  const translated = open()
  translated.write(sync())
  // A translated severity (lc_messages) is read from V, never from S.
  translated.answer(message('E', Buffer.from('SFEHLER\0VERROR\0C42P01\0Mnope\0\0', 'latin1')))
  t.same(events, [], 'an ERROR answers a statement: the connection goes on')
})

t.test('the other end closing a connection (a FIN, which Node answers by ending its own side) trips the gate', async (t) => {
  // Node's end() after the peer's FIN read as the driver leaving, so a PostgreSQL or pooler that
  // closed its connections never tripped the gate: every request failed on its own, a log line
  // each, until the statement deadline (found by a fleet review stopping PostgreSQL behind PgBouncer).
  const { open, events } = setup()
  const closed = open()
  closed.push(null) // the FIN: 'end'
  await tick()
  closed.end() // Node's own end of its side, as net.Socket does without allowHalfOpen
  closed.destroy()
  await tick()
  t.match(events, [{ state: 'unreachable', reason: 'connection lost (closed by the other end)' }])
})

t.test('what is no outage: the driver closing a connection, a wrong password, a session timeout, a cancel request', async (t) => {
  const { gate, open, events } = setup()
  const cancel = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
  const request = Buffer.alloc(16)
  request.writeUInt32BE(16, 0)
  request.writeUInt32BE(80877102, 4)
  cancel.write(request)
  cancel.destroy() // PostgreSQL answers a cancel request by closing the connection
  const closing = open()
  closing.end(message('X'))
  closing.destroy()
  const wrongPassword = gate.socket({ host: ['db'], port: [5432] }) as unknown as FakeSocket
  wrongPassword.write(startup())
  wrongPassword.answer(fatal('28P01'))
  wrongPassword.destroy()
  const timedOut = open()
  timedOut.answer(fatal('57P05'))
  timedOut.destroy()
  await tick()
  t.same(events, [])
  t.ok(gate.reachable)
})

t.test('a failure seen above the sockets (a readiness check without an answer) trips it too', async (t) => {
  const { gate, events, refusedCode } = setup()
  gate.failed('no answer to a readiness check within 2000 ms')
  t.match(events, [{ state: 'unreachable', reason: 'no answer to a readiness check within 2000 ms' }])
  t.equal(await refusedCode(), '08001')
})

/** A self-signed certificate for localhost, made with openssl for this test. */
function selfSigned() {
  const dir = mkdtempSync(join(tmpdir(), 'gate-tls-'))
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' })
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A server that accepts TLS as PostgreSQL does (SSLRequest, 'S', handshake), answers the startup, then nothing. */
async function tlsServer(t: Test) {
  const { key, cert } = selfSigned()
  const received: Buffer[] = []
  const server = createServer((socket) => {
    socket.on('error', () => {})
    socket.once('data', () => {
      socket.write('S')
      const secure = new TLSSocket(socket, { isServer: true, key, cert })
      secure.on('error', () => {})
      secure.once('data', () => secure.write(ready()))
      secure.on('data', (bytes: Buffer) => received.push(bytes))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return { port: (server.address() as AddressInfo).port, received }
}

t.test('over TLS, the gate negotiates it and still reads the protocol: the deadline holds', async (t) => {
  const { port } = await tlsServer(t)
  const clock = new ManualClock()
  const gate = new ConnectGate({ statementDeadlineMs: DEADLINE, connectTimeoutMs: 5000, keepAliveMs: 10_000, clock, tls: { mode: 'require' } })
  const events: Availability[] = []
  gate.onAvailability((event) => events.push(event))
  const socket = await gate.socket({ host: ['127.0.0.1'], port: [port] })
  t.ok(socket instanceof TLSSocket, 'the driver gets the encrypted socket')
  socket.on('error', () => {})
  const started = new Promise((resolve) => socket.once('data', resolve))
  socket.write(startup())
  await started
  t.same(gate.stats(), { inUse: 0, waiting: 0 }, 'started, idle')
  socket.write(sync())
  await tick()
  clock.advance(DEADLINE)
  t.ok(socket.destroyed, 'a statement without an answer for the deadline: the TLS connection is destroyed')
  await tick()
  t.match(events, [{ state: 'unreachable', reason: /no answer within/ }])
})

t.test('TLS that checks the certificate refuses a self-signed one: a failed connection, which trips the gate', async (t) => {
  const { port } = await tlsServer(t)
  const gate = new ConnectGate({ statementDeadlineMs: DEADLINE, connectTimeoutMs: 5000, keepAliveMs: 10_000, clock: new ManualClock(), tls: { mode: 'verify-full' } })
  const events: Availability[] = []
  gate.onAvailability((event) => events.push(event))
  const socket = await gate.socket({ host: ['localhost'], port: [port] })
  const error = await new Promise<NodeJS.ErrnoException>((resolve) => socket.once('error', resolve))
  t.match(error.code, /SELF_SIGNED/, 'the driver sees the certificate error')
  t.match(events, [{ state: 'unreachable', reason: /SELF_SIGNED/ }])
})
