// Where a webhook delivery may never connect (api-contract §10): loopback, private, link-local
// and unique-local addresses, and every other range that is not the public internet (the IANA
// special-purpose registries' ranges that are not globally reachable). Checked on the address
// actually connected to (src/webhooks/send.ts), and on a literal host at creation.
import { BlockList, isIP } from 'node:net'

const V4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // 6to4 relay anycast (RFC 7526, deprecated): a relay into someone's IPv6 network
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address 255.255.255.255
]
const V6: readonly [string, number][] = [
  ['::', 96], // unspecified (::), loopback (::1), and the deprecated IPv4-compatible ::a.b.c.d
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): the network's own translator, at a prefix length only it knows
  ['100::', 64], // discard-only
  // Teredo (RFC 4380): not globally reachable (IANA); its address carries a relay's IPv4 and the
  // client's, obfuscated, and a host with a Teredo interface tunnels to it.
  ['2001::', 32],
  ['2001:2::', 48], // benchmarking
  ['2001:10::', 28], // ORCHID (RFC 4843, deprecated): identifiers, not locators
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // segment routing (SRv6) identifiers
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
]
/**
 * IPv6 prefixes whose addresses carry an IPv4 address (from bit `at`, 32 bits) and reach what it
 * reaches: such an address is as forbidden as the IPv4 address it carries, and no more.
 */
const CARRYING_V4: readonly [prefix: string, at: number][] = [
  ['::ffff:0:0', 96], // IPv4-mapped: a dual-stack socket connects to the IPv4 address itself
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT, RFC 2765): a stateless translator connects to it
  ['64:ff9b::', 96], // NAT64's well-known prefix (RFC 6052): the translator connects to it
  ['2002::', 16], // 6to4 (RFC 3056): a 6to4 router tunnels to it
]

const v4Bits = (address: string) => address.split('.').reduce((bits, octet) => (bits << 8n) | BigInt(octet), 0n)
/** A 128-bit number written as eight groups of hexadecimal digits. */
const v6Text = (bits: bigint) => Array.from({ length: 8 }, (_, i) => ((bits >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':')
/** The 128 bits of an IPv6 address written in hexadecimal groups (as the prefixes above are). */
function v6Bits(address: string): bigint {
  const [head, tail] = address.split('::')
  const groups = (part: string | undefined) => (part ? part.split(':') : [])
  const before = groups(head)
  const after = groups(tail)
  const all = tail === undefined ? before : [...before, ...Array<string>(8 - before.length - after.length).fill('0'), ...after]
  return all.reduce((bits, group) => (bits << 16n) | BigInt(`0x${group}`), 0n)
}

const blocked = new BlockList()
for (const [network, prefix] of V4) {
  blocked.addSubnet(network, prefix, 'ipv4')
  for (const [carrier, at] of CARRYING_V4) {
    blocked.addSubnet(v6Text(v6Bits(carrier) | (v4Bits(network) << BigInt(128 - at - 32))), at + prefix, 'ipv6')
  }
}
for (const [network, prefix] of V6) blocked.addSubnet(network, prefix, 'ipv6')

/** Whether a delivery may not connect to `address` (an IP address; anything else is refused too). */
export function isForbiddenAddress(address: string): boolean {
  // A zone (fe80::1%eth0) says which interface, not where: the address is what is judged.
  const bare = address.split('%')[0]!
  const family = isIP(bare)
  if (family === 0) return true
  return blocked.check(bare, family === 4 ? 'ipv4' : 'ipv6')
}

/** `localhost` and every name below it resolve to loopback (RFC 6761), with or without the root's dot. */
export const isLocalhostName = (hostname: string): boolean => /(^|\.)localhost\.?$/i.test(hostname)

/** The IP address a URL's host is written as (`[::1]` unbracketed), or undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return isIP(bare) ? bare : undefined
}
