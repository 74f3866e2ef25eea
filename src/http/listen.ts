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
  const addresses = isIP(host) ? [host] : [...new Set(await lookup(host))]
  const [first, ...others] = addresses
  await app.listen({ host: first, port })
  // PORT=0: the others listen on the port the system gave the first.
  const bound = (app.server.address() as AddressInfo).port
  const listeners: NetServer[] = []
  const stop = () => Promise.all(listeners.map((listener) => new Promise<void>((resolve) => listener.close(() => resolve())))).then(() => undefined)
  for (const address of others) {
    const listener = createServer((socket) => app.server.emit('connection', socket))
    try {
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject)
        listener.listen({ host: address, port: bound }, () => resolve())
      })
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      // `::1` for `localhost` where IPv6 is off (a container's /etc/hosts lists it anyway).
      if (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT') {
        app.log.warn({ code }, `not listening at ${urlHost(address)}, an address of ${host} this machine does not have`)
        continue
      }
      // Anything else (the port taken at that address) stops the start, as at the first address.
      await stop()
      throw error
    }
    listeners.push(listener)
    app.log.info(`Server listening at http://${urlHost(address)}:${bound}`)
  }
  return stop
}
