// Where an endpoint may point, checked when its url is created or changed (api-contract §10).
// Only a host written as an address can be judged here; a name that resolves to a forbidden
// address is refused at every delivery attempt, on the address actually connected to.
import { parseUrl } from '../domain/urls.js'
import { isForbiddenAddress, isLocalhostName, literalAddress } from './addresses.js'

/**
 * Why `value` may not be an endpoint's url, as the end of "must ..." in a 400; undefined when it
 * may. The URL rule of every link the service takes (domain/urls.ts), without a fragment nor
 * port 0; and,
 * unless the deployment allows private networks, a host that is neither a forbidden address
 * (webhooks/addresses.ts: any that is not public, IPv6 forms carrying one included) nor localhost.
 */
export function endpointUrlRefusal(value: string, allowPrivateNetworks: boolean): string | undefined {
  const url = parseUrl(value, { fragment: false })
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return 'must be an absolute http or https URL of at most 2048 characters, with a host, no user info and no fragment'
  }
  // Port 0 names no service: every delivery would fail to connect. (The parser writes :00 as :0.)
  if (url.port === '0') return 'must not use port 0: give the port the endpoint listens on, or none for the scheme\'s default'
  if (allowPrivateNetworks) return undefined
  // The parser has already lowercased the host and written any IPv4 form (0x7f.1, 2130706433) out as a.b.c.d.
  const address = literalAddress(url.hostname)
  if (address ? isForbiddenAddress(address) : isLocalhostName(url.hostname)) {
    return `must not point to a loopback, private, link-local, unique-local or other non-public address, or to localhost (the host is ${url.hostname}): deliveries never connect inside the service's network`
  }
  return undefined
}
