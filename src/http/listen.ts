// Listening on every address HOST names, each connection served by the one server buildApp set up.
import { lookup as dnsLookup } from 'node:dns/promises'
import { createServer, isIP, type AddressInfo, type Server as NetServer } from 'node:net'
import type { FastifyInstance } from 'fastify'

/** HOST's addresses, in the order the system gives them, each once. */
export type HostLookup = (host: string) => Promise<string[]>

const systemLookup: HostLookup = async (host) => (await dnsLookup(host, { all: true })).map((entry) => entry.address)

/** An address to put in a URL: an IPv6 one in brackets. */
export const urlHost = (address: string) => (address.includes(':') ? `[${address}]` : address)

/**
 * Listens on `port` at every address `host` resolves to (an address is itself), and returns a
 * function that stops accepting on the others (the app's close stops its own).
 *
 * The app listens on the first address. Every other one gets a listener that hands its
 * connections to the app's server (an HTTP server serves a connection emitted to it, as Node
 * documents for its 'connection' event), so that every connection meets what buildApp set on
 * that server: the clientError answers, the pipelining limit, the CONNECT answer, the header
 * count, the request timeout and the closing sweep. Fastify, given `localhost` itself, binds a
 * second server of its own for `::1`, made without any of them (found by an operator review).
 */
export async function listenOnHost(app: FastifyInstance, host: string, port: number, lookup: HostLookup = systemLookup): Promise<() => Promise<void>> {
  const [first, ...others] = isIP(host) ? [host] : await usable(app, host, distinct(await lookup(host)))
  await app.listen({ host: first, port })
  // PORT=0: the others listen on the port the system gave the first.
  const bound = (app.server.address() as AddressInfo).port
  const listeners: NetServer[] = []
  const stop = () => Promise.all(listeners.map((listener) => new Promise<void>((resolve) => listener.close(() => resolve())))).then(() => undefined)
  for (const address of others) {
    // Accepted as Node's HTTP server accepts its own (lib/_http_server.js): with Nagle off, which
    // otherwise held the last segment of a page for 40 ms, and half-open allowed.
    const listener = createServer({ noDelay: true, allowHalfOpen: true }, (socket) => app.server.emit('connection', socket))
    try {
      await listening(listener, address, bound)
    } catch (error) {
      // A port taken at that address stops the start, as at the first.
      await stop()
      throw error
    }
    listeners.push(listener)
    app.log.info(`Server listening at http://${urlHost(address)}:${bound}`)
  }
  return stop
}

const listening = (server: NetServer, host: string, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ host, port }, () => resolve())
  })

/**
 * Each address once: an IPv4-mapped IPv6 address is its IPv4 one, `::` (every address of both
 * families) takes in every other, and `0.0.0.0` every IPv4 one; any such pair would ask for one
 * port twice.
 */
function distinct(addresses: string[]): string[] {
  const plain = [...new Set(addresses.map((address) => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1')))]
  if (plain.includes('::')) return ['::']
  return plain.includes('0.0.0.0') ? ['0.0.0.0', ...plain.filter((address) => isIP(address) === 6)] : plain
}

/**
 * The addresses this machine has, each tried on a port of the system's choosing: one it lacks
 * (`::1` for `localhost` where IPv6 is off, though a container's /etc/hosts lists it) is passed
 * over with a warning, wherever the lookup put it.
 */
async function usable(app: FastifyInstance, host: string, addresses: string[]): Promise<[string, ...string[]]> {
  const kept: string[] = []
  let lacked: unknown
  for (const address of addresses) {
    const probe = createServer()
    try {
      await listening(probe, address, 0)
      kept.push(address)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'EADDRNOTAVAIL' && code !== 'EAFNOSUPPORT') throw error
      app.log.warn({ code }, `not listening at ${urlHost(address)}, an address of ${host} this machine does not have`)
      lacked = error
    } finally {
      probe.close()
    }
  }
  // None of them: the start stops, as for an address given itself.
  if (!kept.length) throw lacked ?? Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND', syscall: 'getaddrinfo' })
  return kept as [string, ...string[]]
}
