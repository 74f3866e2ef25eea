// The connect gate: what the service does when PostgreSQL stops answering. It sits under the
// driver, as the socket factory postgres.js documents (its `socket` option), so it sees every
// statement whichever way Drizzle or anyone else sends it (a query, `.values()`, `.raw()`,
// `.execute()`, a transaction, `reserve()`): all of them are bytes on a socket it made.
//
// It reads the PostgreSQL wire protocol only as far as message boundaries: a Sync or a simple
// Query asks for one ReadyForQuery, so a connection owes answers while it has sent more of those
// than it has received (or a Flush not yet answered). With that it:
// - gives every statement a client-side deadline: a connection that owes an answer and has
//   received nothing for `statementDeadlineMs` (more than statement_timeout, which PostgreSQL
//   enforces itself: only a network that stopped carrying bytes gets there) is destroyed, so its
//   statements fail at once (503) and the pool never reuses it;
// - gives every new connection until its first ReadyForQuery `connectTimeoutMs` (on the gate's
//   clock, so a test can run it by hand; the driver's own connect_timeout is off);
// - enables TCP keep-alive on every connection;
// - trips on every connection error (refused, reset, timed out, closed by the server, a missed
//   deadline; a FATAL error as soon as it arrives, before the driver reads it): for COOL_DOWN_MS
//   new connections are refused at once (SQLSTATE 08001, answered 503), idle connections are
//   closed (they may be as dead as the one that failed), then one connection attempt probes;
//   PostgreSQL answering a statement after the cool-down ends the outage (a completed startup
//   does not: PgBouncer completes it while PostgreSQL is down);
// - reports the outage as two transitions (unreachable since T, for a reason; reachable again),
//   and a probe's failure for a reason not yet reported, for the log and the metrics, instead of
//   a line per refused request.
// This is only this process's view of the database; instances share nothing.
import { connect as netConnect, isIP, Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'

/** How long new connections are refused after a connection error, before one attempt probes. */
export const COOL_DOWN_MS = 1000

/** The time source and timers of the gate: the system's, or a test's hand-driven clock. */
export interface Clock {
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export type Availability =
  | { state: 'unreachable'; since: Date; reason: string }
  /** An outage goes on for a reason it had not had yet (dropped after a restart, say): once per reason. */
  | { state: 'still_unreachable'; since: Date; reason: string }
  | { state: 'reachable'; since: Date; downMs: number }

/** What postgres.js hands its socket factory (the parsed connection options). */
export interface SocketTarget {
  host?: string[]
  port?: number[]
  path?: string | false
}

/**
 * TLS as DATABASE_URL's sslmode asks for it. The gate negotiates it (the driver is told no TLS),
 * so that it reads the connection's bytes after decryption: require, prefer and allow encrypt
 * without checking the certificate (prefer and allow also accept a server without TLS); any other
 * mode checks the certificate and the host name.
 */
export interface TlsMode {
  mode: string
}

export interface GateOptions {
  /** Milliseconds a connection that owes an answer may receive nothing before it is destroyed. */
  statementDeadlineMs: number
  /** Bounds the TLS negotiation, and then the startup until PostgreSQL's first ReadyForQuery. */
  connectTimeoutMs: number
  tls?: TlsMode
  /** Idle time before TCP keep-alive probes start. */
  keepAliveMs: number
  clock?: Clock
  /** Opens a TCP (or Unix) connection; tests hand in their own. */
  connect?: (target: { host: string; port: number } | { path: string }) => Socket
}

/** An error the error handler answers with 503 unavailable (SQLSTATE class 08, connection exception). */
export const connectionError = (code: '08001' | '08006', message: string) => Object.assign(new Error(message), { code })

const CANCEL_REQUEST = 80877102
const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
/** FATAL errors that end a session without anything being wrong with the database. */
const ROUTINE_FATAL = new Set(['57P05', '25P03', '25P04'])
/**
 * Startup errors that mean "cannot serve a connection now": the server is starting, shutting down
 * or full, or the database is not accepting connections (55000, ALTER DATABASE ... ALLOW_CONNECTIONS
 * false) or is gone (3D000, dropped or renamed while the server ran).
 */
const UNAVAILABLE_AT_STARTUP = /^(08|57P0|53300|55000|3D000)/

/**
 * Splits one direction of a connection's bytes into PostgreSQL messages: a type byte, then a
 * length that counts itself (the first message a client sends has no type byte). Bodies are
 * skipped unless `keep` asks for them; chunks may end anywhere.
 */
class Framer {
  private header = Buffer.alloc(5)
  private headerHave = 0
  private body: Buffer | undefined
  private bodyHave = 0
  private skip = 0
  private type = 0

  constructor(
    private untyped: boolean,
    private readonly keep: (type: number) => boolean,
    private readonly onMessage: (type: number, body: Buffer | undefined) => void,
  ) {}

  push(chunk: Buffer) {
    let at = 0
    while (at < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at)
        at += n
        this.skip -= n
        if (this.skip === 0) this.onMessage(this.type, undefined)
        continue
      }
      if (this.body) {
        const n = Math.min(this.body.length - this.bodyHave, chunk.length - at)
        chunk.copy(this.body, this.bodyHave, at, at + n)
        at += n
        this.bodyHave += n
        if (this.bodyHave === this.body.length) {
          const body = this.body
          this.body = undefined
          this.onMessage(this.type, body)
        }
        continue
      }
      const headerLength = this.untyped ? 4 : 5
      const n = Math.min(headerLength - this.headerHave, chunk.length - at)
      chunk.copy(this.header, this.headerHave, at, at + n)
      at += n
      this.headerHave += n
      if (this.headerHave < headerLength) continue
      this.headerHave = 0
      this.type = this.untyped ? 0 : this.header[0]!
      const bodyLength = this.header.readUInt32BE(this.untyped ? 0 : 1) - 4
      this.untyped = false
      if (bodyLength <= 0) this.onMessage(this.type, Buffer.alloc(0))
      else if (this.keep(this.type)) ((this.body = Buffer.alloc(bodyLength)), (this.bodyHave = 0))
      else this.skip = bodyLength
    }
  }
}

/**
 * An ErrorResponse body's fields (each a type byte and a C string): the SQLSTATE (`C`), and
 * whether its severity ends the connection: after a FATAL or a PANIC PostgreSQL closes it. The
 * severity is read from `V`, never translated, or else from `S` (servers before 9.6 send only it).
 */
function errorFields(body: Buffer): { code: string | undefined; fatal: boolean } {
  const fields = new Map<number, string>()
  for (let at = 0; at < body.length && body[at] !== 0; ) {
    const end = body.indexOf(0, at + 1)
    if (end === -1) break
    fields.set(body[at]!, body.toString('latin1', at + 1, end))
    at = end + 1
  }
  const severity = fields.get(0x56) ?? fields.get(0x53)
  return { code: fields.get(0x43), fatal: severity === 'FATAL' || severity === 'PANIC' }
}

/** One database connection as the gate watches it. */
class Watched {
  /** PostgreSQL finished the startup (its first ReadyForQuery). */
  started = false
  /** ReadyForQuery messages owed: one per Sync or Query sent (and one for the startup). */
  owed = 0
  /**
   * A Flush was sent: the first step of an unnamed statement with parameters (Parse, Describe,
   * Flush), whose answer ends with no ReadyForQuery. Owed until a message arrives once every owed
   * ReadyForQuery has: the answers before it come first, in order.
   */
  flushOwed = false
  /** The session's transaction status from its last ReadyForQuery: I(dle), T(ransaction), E(rror). */
  transaction = 0x49
  /** Bytes were sent since the last bytes received (all the gate knows of a TLS connection). */
  sentSinceReceived = false
  /** Since when the connection has owed an answer and received nothing; undefined when it owes none. */
  waitingSince: number | undefined
  /** The startup's deadline until the connection has started, then the statement deadline's. */
  timer: unknown
  /** TLS: the bytes are opaque past the SSLRequest. */
  opaque = false
  /** The driver said goodbye (Terminate), the gate closed it, or its loss was counted: no (further) failure. */
  leaving = false
  /** The other end closed its side (a FIN): an end() after it is Node's answer, not the driver leaving. */
  endedByPeer = false
  /** The last error on the socket, or the FATAL code PostgreSQL sent before closing. */
  lastError: string | undefined
  startupError: string | undefined

  constructor(
    readonly socket: Socket,
    readonly probe: boolean,
    /** Counted in stats(): a connection of the pool, not the readiness check's. */
    readonly pooled: boolean,
  ) {}

  get owesAnswer(): boolean {
    return this.opaque ? this.sentSinceReceived : this.owed > 0 || this.flushOwed || this.sentSinceReceived
  }

  get idle(): boolean {
    return this.started && !this.owesAnswer && this.transaction === 0x49
  }
}

export class ConnectGate {
  private readonly clock: Clock
  private readonly connections = new Set<Watched>()
  /** Set during an outage. */
  private down: { since: number; at: Date; reasons: Set<string> } | undefined
  /** New connections are refused until then (after a connection error). */
  private retryAt = -Infinity
  private probing = false
  private readonly listeners: ((event: Availability) => void)[] = []
  private nextHost = 0
  /** Connections destroyed for missing the statement deadline, for the metrics. */
  deadlineMisses = 0

  constructor(private readonly options: GateOptions) {
    this.clock = options.clock ?? systemClock
  }

  /** Calls `listener` on each transition, unreachable and reachable again; returns how to stop. */
  onAvailability(listener: (event: Availability) => void): () => void {
    this.listeners.push(listener)
    return () => {
      const at = this.listeners.indexOf(listener)
      if (at !== -1) this.listeners.splice(at, 1)
    }
  }

  /** Whether PostgreSQL is reachable as far as this process knows. */
  get reachable(): boolean {
    return this.down === undefined
  }

  /** Statements in flight and connections inside a transaction (PoolStats), read from the sockets. */
  stats(): { inUse: number; waiting: number } {
    let inUse = 0
    let waiting = 0
    for (const c of this.connections) {
      if (!c.started || !c.pooled) continue
      const statements = c.opaque ? (c.sentSinceReceived ? 1 : 0) : c.owed
      inUse += statements > 0 ? 1 : c.transaction !== 0x49 ? 1 : 0
      waiting += Math.max(statements - 1, 0)
    }
    return { inUse, waiting }
  }

  /**
   * The `socket` option of postgres.js: a new connection, or, during the cool-down (and while a
   * probe is out), one that fails at once with 08001.
   */
  socket = (target: SocketTarget): Socket | Promise<Socket> => this.open(target, true)

  /** The same for a connection outside the pool (the readiness check's): watched alike, left out of stats(). */
  unpooledSocket = (target: SocketTarget): Socket | Promise<Socket> => this.open(target, false)

  private open(target: SocketTarget, pooled: boolean): Socket | Promise<Socket> {
    const now = this.clock.now()
    let probe = false
    if (this.down || now < this.retryAt) {
      if (now < this.retryAt || this.probing) return this.refused()
      probe = this.probing = true
    }
    const connect = this.options.connect ?? ((to) => ('path' in to ? netConnect(to.path) : netConnect({ ...to, keepAlive: true, keepAliveInitialDelay: this.options.keepAliveMs })))
    let to: { host: string; port: number } | { path: string }
    if (target.path) to = { path: target.path }
    else {
      const hosts = target.host?.length ? target.host : ['localhost']
      const i = this.nextHost++ % hosts.length
      to = { host: hosts[i]!, port: target.port?.[i] ?? target.port?.[0] ?? 5432 }
    }
    const socket = connect(to)
    socket.setKeepAlive?.(true, this.options.keepAliveMs)
    if ('host' in to) Object.assign(socket, { host: to.host, port: to.port })
    if (this.options.tls && 'host' in to) return this.secure(socket, to.host, this.options.tls, probe, pooled)
    this.watch(new Watched(socket, probe, pooled))
    return socket
  }

  /**
   * Asks for TLS (SSLRequest), and resolves with the encrypted socket once it is up, or with the
   * plain one if the server declines and the mode allows it. Never rejects: a failure resolves
   * with a socket that fails at once, which the driver handles as any failed connection.
   */
  private secure(raw: Socket, host: string, tls: TlsMode, probe: boolean, pooled: boolean): Promise<Socket> {
    return new Promise((resolve) => {
      let done = false
      const timer = this.clock.setTimeout(
        () => fail(Object.assign(new Error('no answer to the TLS negotiation within the connect timeout'), { code: 'CONNECT_TIMEOUT' })),
        this.options.connectTimeoutMs,
      )
      const finish = (socket: Socket) => {
        done = true
        this.clock.clearTimeout(timer)
        raw.removeListener('error', fail)
        raw.removeListener('close', closed)
        resolve(socket)
      }
      const fail = (error: NodeJS.ErrnoException) => {
        if (done) return
        raw.destroy()
        const c = new Watched(raw, probe, pooled)
        c.lastError = error.code ?? error.message
        if (probe) this.probing = false
        this.lost(c)
        finish(this.refused(error))
      }
      const closed = () => fail(Object.assign(new Error('the connection closed during the TLS negotiation'), { code: 'CONNECTION_CLOSED' }))
      raw.on('error', fail)
      raw.on('close', closed)
      raw.once('data', (answer: Buffer) => {
        if (answer[0] !== 0x53) {
          if (tls.mode === 'prefer' || tls.mode === 'allow') {
            this.watch(new Watched(raw, probe, pooled))
            return finish(raw)
          }
          return fail(Object.assign(new Error('the server does not accept TLS connections'), { code: '08001' }))
        }
        const verify = !['require', 'prefer', 'allow'].includes(tls.mode)
        const secure = tlsConnect({ socket: raw, servername: isIP(host) ? undefined : host, rejectUnauthorized: verify })
        secure.once('error', fail)
        secure.once('secureConnect', () => {
          if (done) return secure.destroy()
          secure.removeListener('error', fail)
          Object.assign(secure, { host, port: (raw as Socket & { port?: number }).port })
          this.watch(new Watched(secure, probe, pooled))
          finish(secure)
        })
      })
      const request = Buffer.alloc(8)
      request.writeUInt32BE(8, 0)
      request.writeUInt32BE(SSL_REQUEST, 4)
      raw.write(request)
    })
  }

  /** Counts a failure seen above the sockets (a readiness check that got no answer in time). */
  failed(reason: string): void {
    this.trip(reason)
  }

  private refused(error: Error = connectionError('08001', 'PostgreSQL could not be reached a moment ago')): Socket {
    const socket = new Socket()
    // After the driver has attached its listeners (it does so once this factory returns).
    setImmediate(() => socket.destroy(error))
    return socket
  }

  private watch(c: Watched) {
    this.connections.add(c)
    const { socket } = c
    c.timer = this.clock.setTimeout(() => {
      c.timer = undefined
      if (c.started || socket.destroyed) return
      // Its statements fail with this error (503); the close that follows trips the gate.
      c.lastError = 'CONNECT_TIMEOUT'
      socket.destroy(Object.assign(new Error(`PostgreSQL did not accept a new connection within ${this.options.connectTimeoutMs} ms`), { code: 'CONNECT_TIMEOUT' }))
    }, this.options.connectTimeoutMs)
    const sent = new Framer(
      true,
      (type) => type === 0,
      (type, body) => {
        if (type === 0) {
          const code = body && body.length >= 4 ? body.readUInt32BE(0) : 0
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) c.opaque = true
          else if (code === CANCEL_REQUEST) c.leaving = true // answered by closing the connection
          else c.owed++ // the startup ends with a ReadyForQuery
        } else if (type === 0x53 || type === 0x51) c.owed++ // Sync, Query
        else if (type === 0x48) c.flushOwed = true // Flush
        else if (type === 0x58) c.leaving = true // Terminate
      },
    )
    const received = new Framer(
      false,
      (type) => type === 0x5a || type === 0x45, // ReadyForQuery, ErrorResponse
      (type, body) => {
        // Once every ReadyForQuery owed has come, what follows answers the Flush. Before, a
        // statement whose first step went out behind another's Sync seemed answered by that
        // other's ReadyForQuery, and had no deadline.
        if (type !== 0x5a && c.owed === 0) c.flushOwed = false
        if (type === 0x5a) {
          // A statement's ReadyForQuery, not the startup's, shows that PostgreSQL answers: a
          // pooler (PgBouncer) completes the startup itself while PostgreSQL behind it is down,
          // which ended an outage every second and started it again.
          const statement = c.started
          c.owed = Math.max(c.owed - 1, 0)
          c.transaction = body?.[0] ?? 0x49
          this.startupDone(c)
          if (statement) this.answered(c)
        } else if (type === 0x45 && body) {
          const { code, fatal } = errorFields(body)
          if (!c.started) c.startupError = code
          else c.lastError = code
          // The connection ends: the gate counts it now, before the driver (which reads these
          // bytes after it) fails the statements it carries with this error, so that their 503s
          // are counted in the outage it begins. Counted at the close, as it was, a request could
          // be answered first and logged on its own.
          if (fatal) this.lost(c)
        }
      },
    )
    const write = socket.write
    const end = socket.end
    const observe = (chunk: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer)
      if (bytes.length === 0) return
      if (!c.opaque) sent.push(bytes)
      c.sentSinceReceived = true
      if (c.waitingSince === undefined && c.started) this.startWaiting(c)
    }
    socket.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
      observe(chunk)
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest)
    } as Socket['write']
    socket.end = function (this: Socket, chunk?: unknown, ...rest: unknown[]) {
      observe(chunk)
      // Node ends a socket's side itself once the other end has closed its own (allowHalfOpen
      // false): that end() is no choice of the driver's (found by a fleet review: PostgreSQL or a
      // pooler closing connections never tripped the gate).
      if (!c.endedByPeer) c.leaving = true
      return (end as (...a: unknown[]) => Socket).call(this, chunk, ...rest)
    } as Socket['end']
    socket.on('end', () => {
      c.endedByPeer = true
    })
    socket.on('data', (chunk: Buffer) => {
      c.sentSinceReceived = false
      if (!c.opaque) received.push(chunk)
      if (c.opaque) {
        // TLS: any bytes from the server (its handshake first) show that it answers.
        this.startupDone(c)
        this.answered(c)
      }
      if (c.owesAnswer && c.started) this.startWaiting(c)
      else c.waitingSince = undefined
    })
    // The driver fails the connection's statements on 'error', and a socket's 'close' may come
    // later still: the gate must know first, so that their 503s are counted in the outage.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      c.lastError ??= error.code ?? error.message
      this.lost(c)
    })
    socket.on('close', () => {
      this.connections.delete(c)
      if (c.timer !== undefined) this.clock.clearTimeout(c.timer)
      if (c.probe) this.probing = false
      this.lost(c)
    })
  }

  /** A connection ended: a failure unless it was asked to end (once per connection). */
  private lost(c: Watched) {
    if (c.leaving) return
    c.leaving = true
    if (!c.started) {
      // 28P01 and the like: PostgreSQL answered, the login is wrong. Not an outage.
      if (c.startupError && !UNAVAILABLE_AT_STARTUP.test(c.startupError)) return
      this.trip(
        c.startupError
          ? `PostgreSQL refused the connection (${c.startupError})`
          : c.lastError && c.lastError !== 'CONNECT_TIMEOUT'
            ? `cannot connect (${c.lastError})`
            : 'no answer to a new connection within DB_CONNECT_TIMEOUT',
        c.probe,
      )
      return
    }
    if (c.lastError && ROUTINE_FATAL.has(c.lastError)) return
    this.trip(`connection lost (${c.lastError ?? 'closed by the other end'})`, c.probe)
  }

  /** The connection's startup is over: its deadline gives way to the statement deadline. */
  private startupDone(c: Watched) {
    if (c.started) return
    c.started = true
    if (c.timer !== undefined) this.clock.clearTimeout(c.timer)
    c.timer = undefined
  }

  /** Restarts the deadline: the connection owes an answer from now (or made progress now). */
  private startWaiting(c: Watched) {
    c.waitingSince = this.clock.now()
    // An armed timer checks the time again when it fires.
    if (c.timer === undefined) this.arm(c, this.options.statementDeadlineMs)
  }

  private arm(c: Watched, ms: number) {
    c.timer = this.clock.setTimeout(() => {
      c.timer = undefined
      if (c.waitingSince === undefined || c.socket.destroyed) return
      const silentFor = this.clock.now() - c.waitingSince
      if (silentFor < this.options.statementDeadlineMs) return this.arm(c, this.options.statementDeadlineMs - silentFor)
      this.deadlineMisses++
      // Its statements fail with this error; the close that follows trips the gate.
      c.lastError = `no answer within ${this.options.statementDeadlineMs} ms`
      c.socket.destroy(connectionError('08006', `PostgreSQL sent nothing for ${this.options.statementDeadlineMs} ms while a statement waited; the connection was closed`))
    }, ms)
  }

  private answered(c: Watched) {
    if (c.probe) this.probing = false
    if (!this.down || this.clock.now() < this.retryAt) return
    const downMs = this.clock.now() - this.down.since
    this.down = undefined
    this.emit({ state: 'reachable', since: new Date(), downMs })
  }

  /** `probed`: the failure is the probe's, the one attempt after a cool-down: what keeps the outage going. */
  private trip(reason: string, probed = false) {
    this.retryAt = this.clock.now() + COOL_DOWN_MS
    if (!this.down) {
      this.down = { since: this.clock.now(), at: new Date(), reasons: new Set([reason]) }
      this.emit({ state: 'unreachable', since: this.down.at, reason })
    } else if (probed && !this.down.reasons.has(reason)) {
      // What keeps it down may not be what began it: a session ended (57P01), then the database
      // gone (3D000) or closed to connections (55000), as the probes find. Said once per reason
      // (found by a fault review); the other connections failing meanwhile say nothing new.
      this.down.reasons.add(reason)
      this.emit({ state: 'still_unreachable', since: this.down.at, reason })
    }
    // An idle connection may be as dead as the one that failed, and the next statement would
    // wait out the deadline on it: close them; they are opened again after the cool-down.
    for (const c of this.connections) {
      if (!c.idle) continue
      c.leaving = true
      c.socket.destroy()
    }
  }

  private emit(event: Availability) {
    for (const listener of this.listeners) listener(event)
  }
}
