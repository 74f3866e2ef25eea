// One delivery attempt: one POST, and what came of it in a few words. Built on node:http and
// node:https, which do all this needs (a lookup hook, the socket, keep-alive agents) and follow
// no redirects of their own.
//
// Bounded in every way a receiver could stretch it: one deadline over the whole attempt
// (connecting, sending, the answer's head and body), at most ANSWER_READ_LIMIT bytes of the answer read
// before its connection is closed, and nothing of the answer kept but its status. A receiver
// that hangs, trickles, resets or streams without end costs one attempt, never a buffer, a
// promise that never settles or an exception. The status line decides the outcome: what happens
// to the body after it only ends the read.
//
// Names are resolved by DNS queries of the attempt's own (node:dns's Resolver, c-ares, to the
// servers of /etc/resolv.conf), not by the system's getaddrinfo: those run on libuv's four
// threads shared with file access, crypto and the database driver's own lookups, and cannot be
// stopped, so a few names whose DNS hangs would stall the whole process. A query is bounded by
// the attempt's deadline and cancelled when it passes; /etc/hosts and search domains do not
// apply (a name under localhost resolves to loopback, as RFC 6761 has it).
//
// The SSRF guard (api-contract §10) checks the addresses the connection may actually use: the
// lookup refuses a name if any address it resolves to is forbidden (so that no answer mixing a
// private address in with public ones can reach it), a URL whose host is a forbidden address
// is refused without connecting, and each new connection's remote address is checked once
// connected, before anything is written to it.
import http from 'node:http'
import https from 'node:https'
import { Resolver as DnsResolver } from 'node:dns/promises'
import type { LookupFunction, Socket } from 'node:net'
import { isForbiddenAddress, isLocalhostName, literalAddress } from './addresses.js'

/** What an attempt came to: success (2xx), another answer, or no answer for one of three reasons. */
export const ATTEMPT_KINDS = ['succeeded', 'http_error', 'timeout', 'network', 'blocked'] as const
export type AttemptKind = (typeof ATTEMPT_KINDS)[number]

export interface AttemptResult {
  kind: AttemptKind
  /** The status the receiver answered with; null when it gave none. */
  status: number | null
  /** Why it failed, for people (a delivery's last_error); null on success. Never a secret or the answer's body. */
  error: string | null
}

export interface ResolvedAddress {
  address: string
  family: number
}
/**
 * Every address a host name resolves to (tests answer for names of their own). `signal` aborts
 * when the attempt has ended (its deadline, a shutdown): stop then; any later answer is ignored.
 */
export type Resolver = (hostname: string, signal: AbortSignal) => Promise<ResolvedAddress[]>

/** One DNS query's wait for an answer, and how often it is sent: about 7.5 s at most with one server, inside the attempt's 10 s. */
const DNS_TRY_MS = 2500
const DNS_TRIES = 2
const LOOPBACK: readonly ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
]
/** DNS codes that mean the name has no address (rather than that DNS failed). */
const NO_ADDRESS = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA'])

/**
 * Resolves with A and AAAA queries of its own (c-ares), cancelled when `signal` aborts. `servers`:
 * the DNS servers to ask instead of /etc/resolv.conf's (tests).
 */
export function dnsResolver(options: { servers?: string[] } = {}): Resolver {
  return async (hostname, signal) => {
    if (isLocalhostName(hostname)) return [...LOOPBACK]
    signal.throwIfAborted()
    const dns = new DnsResolver({ timeout: DNS_TRY_MS, tries: DNS_TRIES })
    if (options.servers) dns.setServers(options.servers)
    const cancel = () => dns.cancel()
    signal.addEventListener('abort', cancel, { once: true })
    try {
      const [v4, v6] = await Promise.allSettled([dns.resolve4(hostname), dns.resolve6(hostname)])
      const found = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ]
      if (found.length > 0) return found
      // Both failed: the failure that says most (a timeout rather than "no AAAA record").
      const reasons = [v4, v6].map((r) => (r as PromiseRejectedResult).reason as NodeJS.ErrnoException)
      throw reasons.find((e) => !NO_ADDRESS.has(String(e.code))) ?? reasons[0]
    } finally {
      signal.removeEventListener('abort', cancel)
    }
  }
}
export const systemResolver: Resolver = dnsResolver()

/** The attempt's deadline timer: the real one, or one a test fires when it chooses. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}
const realTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export interface SenderOptions {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: true turns the address checks off (development and tests). */
  allowPrivateNetworks: boolean
  /** Milliseconds an attempt may take in all; 10 s by default (the contract's). */
  timeoutMs?: number
  resolve?: Resolver
  timers?: Timers
}

export interface Attempt {
  url: string
  headers: Readonly<Record<string, string>>
  body: string
  /**
   * Aborting it ends the attempt at once, as `aborted`: a shutdown that could not wait. An
   * attempt whose answer's status line had arrived ends as that status says instead.
   */
  signal?: AbortSignal
}

export const DEFAULT_TIMEOUT_MS = 10_000
/** Bytes of an answer read at most; a longer one has its connection closed instead of drained. */
export const ANSWER_READ_LIMIT = 4096
/**
 * Idle keep-alive connections kept per origin, and how long each may wait for the next delivery:
 * less than the 5 s after which common servers (Node's, Apache's) close an idle connection, so
 * that the receiver seldom closes one as an attempt is sent on it. A server that announces its
 * own (`Keep-Alive: timeout=N`) is given a second less than that by Node's agent.
 */
const FREE_SOCKETS_PER_ORIGIN = 8
const IDLE_SOCKET_MS = 4_000
const MAX_ERROR_LENGTH = 500
const USER_AGENT = 'feedback-service-webhooks/1'

/** A connection that would reach a forbidden address. */
class BlockedAddress extends Error {
  constructor(readonly address: string) {
    super(`the address ${address} is not on the public internet`)
  }
}
/** The deadline passed; `resolving` while the host name's lookup was still unanswered. */
class Deadline extends Error {
  constructor(readonly resolving: boolean) {
    super('deadline')
  }
}
class Aborted extends Error {}
/** The host name's lookup failed (its DNS code, if any, on `code`). */
class LookupFailed extends Error {
  readonly code: string
  constructor(cause: unknown) {
    super('lookup failed')
    this.code = String((cause as NodeJS.ErrnoException | undefined)?.code ?? '')
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`

/**
 * A name that resolves to no address, or to none on the public internet: one reason for both, and
 * never the address. Quoting it made the delivery log a lookup of internal names through the
 * server's resolver (split-horizon DNS), and a separate "did not resolve" said which exist
 * (found by an outside review). A literal address in the URL is the endpoint owner's own, and is named.
 */
const noPublicAddress = (hostname: string) => `the host name ${hostname} does not resolve to a public internet address`

/** The error of a failed connection or exchange, in words: its code at most, never its message. */
function describe(error: unknown, hostname: string, timeoutMs: number): { kind: AttemptKind; error: string } {
  if (error instanceof BlockedAddress) return { kind: 'blocked', error: literalAddress(hostname) === undefined ? noPublicAddress(hostname) : error.message }
  if (error instanceof Deadline) {
    return { kind: 'timeout', error: error.resolving ? `the host name ${hostname} did not resolve within ${seconds(timeoutMs)}` : `timed out after ${seconds(timeoutMs)}` }
  }
  const code = String((error as NodeJS.ErrnoException | undefined)?.code ?? '')
  const network = (words: string) => ({ kind: 'network' as const, error: words })
  if (error instanceof LookupFailed) {
    if (NO_ADDRESS.has(code) || code === '') return network(noPublicAddress(hostname))
    if (code === 'ETIMEOUT') return network(`the host name ${hostname} did not resolve: DNS did not answer in time`)
    return network(`the host name ${hostname} did not resolve (${code})`)
  }
  if (code === 'ECONNREFUSED') return network('connection refused')
  if (code === 'ECONNRESET') return network('connection reset')
  if (code === 'EPIPE') return network('connection closed while the delivery was sent')
  if (code === 'ETIMEDOUT') return network('connection timed out')
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return network('host unreachable')
  if (code.startsWith('HPE_')) return network('the answer was not valid HTTP')
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_/.test(code)) return network(`TLS failed (${code})`)
  return network(code ? `connection failed (${code})` : 'connection failed')
}

function describeStatus(status: number): string | null {
  if (status >= 200 && status < 300) return null
  if (status >= 300 && status < 400) return `answered ${status}: redirects are not followed`
  if (status === 410) return 'answered 410 Gone: the endpoint is disabled'
  return `answered ${status}`
}

/**
 * One attempt's lookup: resolves with `resolve` and, guarded, refuses a name that has any
 * forbidden address. Once `signal` aborts (the attempt has ended), the resolver is told to stop
 * and whatever it answers is ignored. `resolving` says when a lookup starts and ends.
 */
function guardedLookup(resolve: Resolver, guard: boolean, signal: AbortSignal, resolving: (active: boolean) => void): LookupFunction {
  return ((hostname: string, options: { family?: number | string; all?: boolean }, callback: (...args: unknown[]) => void) => {
    let answered = false
    const answer = (...args: unknown[]) => {
      if (answered || signal.aborted) return
      answered = true
      resolving(false)
      callback(...args)
    }
    resolving(true)
    resolve(hostname, signal).then(
      (found) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0)
        const addresses = found.filter((a) => family === 0 || a.family === family)
        if (guard) {
          const forbidden = found.find((a) => isForbiddenAddress(a.address))
          if (forbidden) return answer(new BlockedAddress(forbidden.address))
        }
        if (addresses.length === 0) return answer(new LookupFailed({ code: 'ENOTFOUND' }))
        if (options.all) answer(null, addresses)
        else answer(null, addresses[0]!.address, addresses[0]!.family)
      },
      (error: unknown) => answer(new LookupFailed(error)),
    )
  }) as LookupFunction
}

/** Checks each new connection's remote address before anything is written to it (exported for its test). */
export function guardConnections<A extends http.Agent>(agent: A): A {
  const internal = agent as unknown as { createConnection(options: object, callback?: unknown): Socket }
  const create = internal.createConnection.bind(agent)
  internal.createConnection = (options, callback) => {
    const socket = create(options, callback)
    // Before the listeners that write what was queued while connecting.
    socket.prependOnceListener('connect', () => {
      const address = socket.remoteAddress
      if (address === undefined || isForbiddenAddress(address)) socket.destroy(new BlockedAddress(address ?? 'unknown'))
    })
    return socket
  }
  return agent
}

/**
 * Sends attempts over keep-alive connections (one pool per origin, in Node's agents), so that a
 * busy endpoint is not paid a TCP and TLS handshake per delivery. One per dispatcher.
 */
export class Sender {
  readonly #timeoutMs: number
  readonly #guard: boolean
  readonly #timers: Timers
  readonly #resolve: Resolver
  readonly #http: http.Agent
  readonly #https: https.Agent

  constructor(options: SenderOptions) {
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    this.#guard = !options.allowPrivateNetworks
    this.#timers = options.timers ?? realTimers
    this.#resolve = options.resolve ?? systemResolver
    // No lookup here: an agent's options override a request's, and each attempt has its own (send).
    const agentOptions = { keepAlive: true, maxFreeSockets: FREE_SOCKETS_PER_ORIGIN, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const }
    this.#http = new http.Agent(agentOptions)
    this.#https = new https.Agent(agentOptions)
    if (this.#guard) {
      guardConnections(this.#http)
      guardConnections(this.#https)
    }
  }

  /** Makes one attempt; always resolves, whatever the receiver does. `aborted` only through `signal`. */
  async send(attempt: Attempt): Promise<AttemptResult | 'aborted'> {
    let url: URL
    try {
      url = new URL(attempt.url)
    } catch {
      return { kind: 'network', status: null, error: 'the URL is not valid' }
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { kind: 'network', status: null, error: 'the URL is neither http nor https' }
    const literal = literalAddress(url.hostname)
    if (this.#guard && literal !== undefined && isForbiddenAddress(literal)) return { kind: 'blocked', status: null, error: new BlockedAddress(literal).message }
    if (attempt.signal?.aborted) return 'aborted'

    let resolving = false
    // Aborted once the attempt has ended, however it ended: a lookup still running stops then.
    const ended = new AbortController()
    const deadline = this.#timers.setTimeout(() => {
      abortCurrent?.(new Deadline(resolving))
      ended.abort()
    }, this.#timeoutMs)
    let abortCurrent: ((error: Error) => void) | undefined
    const onAbort = () => abortCurrent?.(new Aborted())
    attempt.signal?.addEventListener('abort', onAbort, { once: true })
    const lookup = guardedLookup(this.#resolve, this.#guard, ended.signal, (active) => (resolving = active))
    try {
      // One request per attempt, even when a kept-alive connection fails under it: a receiver
      // that closed an idle connection as the attempt was sent on it cannot be told from one
      // that read the delivery and then reset the connection, and the latter must not be sent
      // it twice. Either way the attempt failed and the schedule makes the next.
      const outcome = await this.#exchange(url, attempt, lookup, (abort) => (abortCurrent = abort))
      // Once its status line has arrived, the receiver has answered: a 2xx is a success and
      // anything else a failure with that status, whatever becomes of the body after it (it is
      // read only so that the connection may serve again; it never changes the outcome).
      if (outcome.status !== null) {
        const error = describeStatus(outcome.status)
        return { kind: error === null ? 'succeeded' : 'http_error', status: outcome.status, error }
      }
      if (outcome.error instanceof Aborted) return 'aborted'
      const failure = describe(outcome.error, url.hostname, this.#timeoutMs)
      return { kind: failure.kind, status: null, error: failure.error.slice(0, MAX_ERROR_LENGTH) }
    } finally {
      this.#timers.clearTimeout(deadline)
      ended.abort()
      attempt.signal?.removeEventListener('abort', onAbort)
    }
  }

  /**
   * One request and its answer, read to its end or to ANSWER_READ_LIMIT. `status` once the answer's
   * status line has arrived; otherwise `error` says why none did.
   */
  #exchange(
    url: URL,
    attempt: Attempt,
    lookup: LookupFunction,
    setAbort: (abort: (error: Error) => void) => void,
  ): Promise<{ status: number | null; error?: unknown }> {
    return new Promise((resolve) => {
      let status: number | null = null
      let settled = false
      const settle = (error?: unknown) => {
        if (settled) return
        settled = true
        resolve({ status, ...(error === undefined ? {} : { error }) })
      }
      const body = Buffer.from(attempt.body)
      let request: http.ClientRequest
      try {
        request = (url.protocol === 'https:' ? https : http).request(url, {
          method: 'POST',
          agent: url.protocol === 'https:' ? this.#https : this.#http,
          lookup,
          headers: { ...attempt.headers, 'content-type': 'application/json', 'content-length': body.length, 'user-agent': USER_AGENT },
        })
      } catch (error) {
        // Node refused the request before sending anything (a URL it cannot use): a failure like any other.
        resolve({ status: null, error })
        return
      }
      setAbort((error) => {
        if (settled) return
        settle(error)
        request.destroy(error)
      })
      request.on('error', (error) => settle(error))
      request.on('response', (response) => {
        status = response.statusCode ?? null
        let read = 0
        response.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (read > ANSWER_READ_LIMIT) {
            // Enough: what the answer says past this is never read, and its connection not reused.
            settle()
            response.destroy()
          }
        })
        response.on('end', () => settle())
        response.on('error', (error) => settle(error))
        response.on('close', () => settle(response.complete ? undefined : Object.assign(new Error('closed'), { code: 'ECONNRESET' })))
      })
      request.end(body)
    })
  }

  /** Closes the kept-alive connections (once no attempt is in flight). */
  close(): void {
    this.#http.destroy()
    this.#https.destroy()
  }
}
