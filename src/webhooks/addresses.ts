// Where a webhook delivery may never connect (api-contract §10): loopback, private, link-local
// and unique-local addresses, and the other ranges that are not the public internet. Checked on
// the address actually connected to (src/webhooks/send.ts), and on a literal host at creation.
import { BlockList, isIP } from 'node:net'

const V4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and broadcast
]
const V6: readonly [string, number][] = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['64:ff9b::', 96], // NAT64 of an IPv4 address
  ['2002::', 16], // 6to4 of an IPv4 address
]

const blocked = new BlockList()
for (const [network, prefix] of V4) {
  blocked.addSubnet(network, prefix, 'ipv4')
  // The same address written as IPv4-mapped IPv6 (::ffff:127.0.0.1).
  blocked.addSubnet(`::ffff:${network}`, 96 + prefix, 'ipv6')
}
for (const [network, prefix] of V6) blocked.addSubnet(network, prefix, 'ipv6')

/** Whether a delivery may not connect to `address` (an IP address; anything else is refused too). */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/** The IP address a URL's host is written as (`[::1]` unbracketed), or undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return isIP(bare) ? bare : undefined
}
