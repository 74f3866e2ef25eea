// One attempt against receivers that answer well and badly: what it comes to, in words, and that
// every misbehaviour ends the attempt (the deadline is fired by the test, never waited for).
// The SSRF guard on the address actually connected to: a literal address, a name, an injected
// resolver's answer, a mixed answer, and the connection's own check.
import http from 'node:http'
import { createSocket } from 'node:dgram'
import { createServer, type AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { ANSWER_READ_LIMIT, dnsResolver, guardConnections, Sender, systemResolver, type Attempt, type Resolver } from '../../src/webhooks/send.js'
import { startReceiver } from '../helpers/receiver.js'
import { headArrived, manualTimers, waitUntil } from '../helpers/webhooks.js'

const attemptTo = (url: string): Attempt => ({
  url,
  headers: { 'webhook-id': 'evt_0123456789ABCDEFGHIJK', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' },
  body: '{"hello":"world"}',
})

function sender(t: Test, options: Partial<ConstructorParameters<typeof Sender>[0]> = {}) {
  const timers = manualTimers()
  const s = new Sender({ allowPrivateNetworks: true, timers, ...options })
  t.teardown(() => s.close())
  return { sender: s, timers }
}

t.test('a 2xx is success; the request is a POST of the body with the given headers and content-type', async (t) => {
  const receiver = await startReceiver({ status: 204 })
  const { sender: s } = sender(t)
  t.same(await s.send(attemptTo(receiver.url)), { kind: 'succeeded', status: 204, error: null })
  const [request] = receiver.requests
  t.equal(request!.method, 'POST')
  t.equal(request!.url, '/hook')
  t.equal(request!.body, '{"hello":"world"}')
  t.equal(request!.headers['content-type'], 'application/json')
  t.equal(request!.headers['content-length'], '17')
  t.equal(request!.headers['webhook-id'], 'evt_0123456789ABCDEFGHIJK')
})

t.test('other answers fail with their status, in words', async (t) => {
  const receiver = await startReceiver()
  const { sender: s } = sender(t)
  for (const [status, error] of [
    [500, 'answered 500'],
    [404, 'answered 404'],
    [410, 'answered 410 Gone: the endpoint is disabled'],
    [301, 'answered 301: redirects are not followed'],
  ] as const) {
    receiver.answer({ status })
    t.same(await s.send(attemptTo(receiver.url)), { kind: 'http_error', status, error }, String(status))
  }
})

t.test('a redirect is not followed: its target sees nothing', async (t) => {
  const target = await startReceiver()
  const receiver = await startReceiver({ status: 302, location: target.url })
  const { sender: s } = sender(t)
  t.same(await s.send(attemptTo(receiver.url)), { kind: 'http_error', status: 302, error: 'answered 302: redirects are not followed' })
  t.equal(target.requests.length, 0, 'the redirect target received nothing')
})

t.test('keep-alive: attempts to one origin share a connection', async (t) => {
  const receiver = await startReceiver()
  const { sender: s } = sender(t)
  for (let i = 0; i < 5; i++) t.match(await s.send(attemptTo(receiver.url)), { kind: 'succeeded' })
  t.equal(receiver.requests.length, 5)
  t.equal(receiver.connections(), 1, 'five attempts, one connection')
})

t.test('a kept-alive connection reset under an attempt: the attempt fails, and the receiver had one request', async (t) => {
  // The receiver reads the second delivery in full and resets the connection: it must not be sent
  // it again within the attempt (it may have acted on it); the schedule makes the next attempt.
  const receiver = await startReceiver('reset-reused')
  const { sender: s } = sender(t)
  t.same(await s.send(attemptTo(receiver.url)), { kind: 'succeeded', status: 200, error: null })
  t.same(await s.send(attemptTo(receiver.url)), { kind: 'network', status: null, error: 'connection reset' })
  t.equal(receiver.requests.length, 2, 'one request per attempt')
  t.equal(receiver.connections(), 1, 'both on the kept-alive connection')
})

t.test('a receiver that never answers: the deadline ends the attempt', async (t) => {
  const receiver = await startReceiver('hang')
  const { sender: s, timers } = sender(t, { timeoutMs: 10_000 })
  const result = s.send(attemptTo(receiver.url))
  await receiver.received(1)
  t.equal(timers.pending(), 1, 'one deadline, running')
  timers.fire()
  t.same(await result, { kind: 'timeout', status: null, error: 'timed out after 10 s' })
  await waitUntil(async () => receiver.open(), (open) => open === 0)
  t.pass('and its connection was closed')
})

t.test('a receiver that answers 200 and then trickles its body: the status line decided, the deadline ends the read', async (t) => {
  const receiver = await startReceiver('slow')
  const { sender: s, timers } = sender(t, { timeoutMs: 2500 })
  const head = headArrived(t)
  const result = s.send(attemptTo(receiver.url))
  await head
  timers.fire()
  t.same(await result, { kind: 'succeeded', status: 200, error: null })
  await waitUntil(async () => receiver.open(), (open) => open === 0)
  t.pass('and its connection was closed')
})

t.test('once the status line has arrived, what becomes of the body does not change the outcome', async (t) => {
  const receiver = await startReceiver()
  const { sender: s, timers } = sender(t)
  const cases = [
    { status: 200, end: 'reset', expected: { kind: 'succeeded', status: 200, error: null } },
    { status: 202, end: 'deadline', expected: { kind: 'succeeded', status: 202, error: null } },
    { status: 500, end: 'reset', expected: { kind: 'http_error', status: 500, error: 'answered 500' } },
    { status: 503, end: 'deadline', expected: { kind: 'http_error', status: 503, error: 'answered 503' } },
    { status: 410, end: 'reset', expected: { kind: 'http_error', status: 410, error: 'answered 410 Gone: the endpoint is disabled' } },
  ] as const
  for (const c of cases) {
    receiver.answer({ head: c.status })
    const head = headArrived(t)
    const result = s.send(attemptTo(receiver.url))
    await head
    if (c.end === 'reset') receiver.resetOpen()
    else timers.fire()
    t.same(await result, c.expected, `${c.status}, then its body ${c.end === 'reset' ? 'reset' : 'never came'}`)
  }
  t.equal(timers.pending(), 0, 'no deadline left running')
})

t.test('a shutdown that cannot wait, once the status line has arrived: the answer decides', async (t) => {
  const receiver = await startReceiver({ head: 200 })
  const { sender: s } = sender(t)
  const abort = new AbortController()
  const head = headArrived(t)
  const result = s.send({ ...attemptTo(receiver.url), signal: abort.signal })
  await head
  abort.abort()
  t.same(await result, { kind: 'succeeded', status: 200, error: null }, 'a success, not given back to be sent again')
})

t.test('an endless body: read to the limit, then the connection is closed; the 2xx counts', async (t) => {
  const receiver = await startReceiver('huge')
  const { sender: s, timers } = sender(t)
  t.same(await s.send(attemptTo(receiver.url)), { kind: 'succeeded', status: 200, error: null })
  t.equal(timers.pending(), 0, 'no deadline left running')
  await waitUntil(async () => receiver.open(), (open) => open === 0)
  t.ok(receiver.hugeBytes() < 64 * 1024 * 1024, `the receiver could write only what the socket buffers hold (${receiver.hugeBytes()} bytes; read at most ${ANSWER_READ_LIMIT})`)
  receiver.answer('huge')
  t.same(await s.send(attemptTo(receiver.url)), { kind: 'succeeded', status: 200, error: null }, 'and the next attempt is on a new connection')
  t.equal(receiver.connections(), 2)
})

t.test('an error answer with an endless body fails with its status', async (t) => {
  const server = http.createServer((req, res) => {
    res.writeHead(500)
    const pump = () => {
      while (!res.destroyed && res.write(Buffer.alloc(65536))) {}
    }
    res.on('drain', pump)
    pump()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const { sender: s } = sender(t)
  t.same(await s.send(attemptTo(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)), { kind: 'http_error', status: 500, error: 'answered 500' })
})

t.test('a reset connection, a refused one, a name that does not resolve, an answer that is not HTTP', async (t) => {
  const receiver = await startReceiver('reset')
  const { sender: s } = sender(t)
  t.same(await s.send(attemptTo(receiver.url)), { kind: 'network', status: null, error: 'connection reset' })

  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise((resolve) => closed.close(resolve))
  t.same(await s.send(attemptTo(`http://127.0.0.1:${port}/`)), { kind: 'network', status: null, error: 'connection refused' })

  const nowhere: Resolver = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })
  }
  const { sender: unresolved } = sender(t, { resolve: nowhere })
  t.same(await unresolved.send(attemptTo('https://hooks.example.invalid/x')), { kind: 'network', status: null, error: 'the host name hooks.example.invalid does not resolve to a public internet address' })

  const garbage = createServer((socket) => socket.end('SMTP ready\r\n\r\n'))
  await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve))
  t.teardown(() => garbage.close())
  t.same(await s.send(attemptTo(`http://127.0.0.1:${(garbage.address() as AddressInfo).port}/`)), { kind: 'network', status: null, error: 'the answer was not valid HTTP' })
})

/** A resolver that never answers: it notes each name asked and whether it was told to stop. */
function silentResolver() {
  const asked: { hostname: string; stopped: boolean }[] = []
  let notify = () => {}
  const resolve: Resolver = (hostname, signal) => {
    const lookup = { hostname, stopped: signal.aborted }
    signal.addEventListener('abort', () => (lookup.stopped = true), { once: true })
    asked.push(lookup)
    notify()
    return new Promise(() => {})
  }
  const lookedUp = () => new Promise<void>((resolve) => (asked.length > 0 ? resolve() : (notify = resolve)))
  return { resolve, asked, lookedUp }
}

t.test('a lookup that never answers: the deadline ends the attempt, says so, and tells the lookup to stop', async (t) => {
  const dns = silentResolver()
  const { sender: s, timers } = sender(t, { resolve: dns.resolve, timeoutMs: 10_000 })
  const result = s.send(attemptTo('https://hooks.example.com/hook'))
  await dns.lookedUp()
  t.same(dns.asked, [{ hostname: 'hooks.example.com', stopped: false }], 'the name is being looked up')
  timers.fire()
  t.same(await result, { kind: 'timeout', status: null, error: 'the host name hooks.example.com did not resolve within 10 s' })
  t.same(dns.asked, [{ hostname: 'hooks.example.com', stopped: true }], 'and its lookup was told to stop')
})

t.test('with the real clock: a short deadline ends a lookup that never answers', async (t) => {
  const dns = silentResolver()
  const s = new Sender({ allowPrivateNetworks: false, resolve: dns.resolve, timeoutMs: 200 })
  t.teardown(() => s.close())
  t.same(await s.send(attemptTo('https://hooks.example.com/hook')), { kind: 'timeout', status: null, error: 'the host name hooks.example.com did not resolve within 0.2 s' })
  t.equal(dns.asked[0]?.stopped, true)
})

t.test('a lookup that fails says how, never as a connection failure', async (t) => {
  for (const [code, error] of [
    ['ETIMEOUT', 'the host name hooks.example.com did not resolve: DNS did not answer in time'],
    ['ENODATA', 'the host name hooks.example.com does not resolve to a public internet address'],
    ['ECONNREFUSED', 'the host name hooks.example.com did not resolve (ECONNREFUSED)'],
    ['ESERVFAIL', 'the host name hooks.example.com did not resolve (ESERVFAIL)'],
  ] as const) {
    const failing: Resolver = async () => {
      throw Object.assign(new Error('queryA'), { code })
    }
    t.same(await sender(t, { resolve: failing }).sender.send(attemptTo('https://hooks.example.com/hook')), { kind: 'network', status: null, error }, code)
  }
})

t.test('the DNS resolver: its own queries, cancelled when the attempt ends; localhost is loopback without a query', async (t) => {
  // A DNS server that takes every query and never answers.
  const blackHole = createSocket('udp4')
  let queries = 0
  let queried = () => {}
  blackHole.on('message', () => {
    queries++
    queried()
  })
  await new Promise<void>((resolve) => blackHole.bind(0, '127.0.0.1', resolve))
  t.teardown(() => blackHole.close())
  const resolve = dnsResolver({ servers: [`127.0.0.1:${blackHole.address().port}`] })

  t.same(await resolve('api.localhost', new AbortController().signal), [
    { address: '127.0.0.1', family: 4 },
    { address: '::1', family: 6 },
  ])
  t.equal(queries, 0, 'localhost asks no server')

  const ended = new AbortController()
  const lookup = resolve('hooks.example.com', ended.signal)
  await new Promise<void>((resolve) => (queries > 0 ? resolve() : (queried = resolve)))
  ended.abort()
  await t.rejects(lookup, { code: 'ECANCELLED' }, 'the queries are cancelled at once')

  const { sender: s, timers } = sender(t, { resolve })
  queries = 0
  const asked = new Promise<void>((resolve) => (queried = resolve))
  const result = s.send(attemptTo('https://hooks.example.com/hook'))
  await asked
  timers.fire()
  t.same(await result, { kind: 'timeout', status: null, error: 'the host name hooks.example.com did not resolve within 10 s' })
})

t.test('a URL that is neither http nor https', async (t) => {
  const { sender: s } = sender(t)
  t.same(await s.send(attemptTo('ftp://example.com/')), { kind: 'network', status: null, error: 'the URL is neither http nor https' })
})

t.test('aborted (a shutdown that cannot wait) ends the attempt at once', async (t) => {
  const receiver = await startReceiver('hang')
  const { sender: s } = sender(t)
  const abort = new AbortController()
  const result = s.send({ ...attemptTo(receiver.url), signal: abort.signal })
  await receiver.received(1)
  abort.abort()
  t.equal(await result, 'aborted')
})

t.test('the SSRF guard on', async (t) => {
  const receiver = await startReceiver()
  const blocked = (address: string) => ({ kind: 'blocked', status: null, error: `the address ${address} is not on the public internet` })
  // A name's addresses are never quoted, and the words are those of a name that does not resolve:
  // the delivery log is no lookup of internal names (found by an outside review).
  const unreachableName = (name: string) => ({ kind: 'blocked', status: null, error: `the host name ${name} does not resolve to a public internet address` })
  const guarded = (resolve?: Resolver) => sender(t, { allowPrivateNetworks: false, ...(resolve ? { resolve } : {}) }).sender

  t.same(await guarded().send(attemptTo(receiver.url)), blocked('127.0.0.1'), 'a literal loopback address')
  t.same(await guarded().send(attemptTo(`http://[::ffff:127.0.0.1]:${receiver.port}/`)), blocked('::ffff:7f00:1'), 'written as IPv4-mapped IPv6')
  t.same(await guarded().send(attemptTo(`http://0x7f.1:${receiver.port}/`)), blocked('127.0.0.1'), 'written in hexadecimal (the URL parser normalises it)')
  const localhost = await guarded(systemResolver).send(attemptTo(`http://localhost:${receiver.port}/hook`))
  t.same(localhost, unreachableName('localhost'), 'the name localhost')
  t.same(await guarded(async () => [{ address: '127.0.0.1', family: 4 }]).send(attemptTo(`http://hooks.example.com:${receiver.port}/hook`)), unreachableName('hooks.example.com'), 'a public-looking name that resolves to loopback')
  t.same(await guarded(async () => [{ address: '10.0.0.5', family: 4 }]).send(attemptTo('https://hooks.example.com/hook')), unreachableName('hooks.example.com'), 'or to a private address')
  t.same(
    await guarded(async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ]).send(attemptTo(`http://hooks.example.com:${receiver.port}/hook`)),
    unreachableName('hooks.example.com'),
    'a name with a public and a loopback address is refused whole',
  )
  t.same(
    await guarded(async () => [
      { address: 'fd00::1', family: 6 },
      { address: '8.8.8.8', family: 4 },
    ]).send(attemptTo('https://hooks.example.com/hook')),
    unreachableName('hooks.example.com'),
    'whichever comes first',
  )
  t.equal(receiver.requests.length, 0, 'the receiver on 127.0.0.1 saw nothing')

  const open = await sender(t, { allowPrivateNetworks: true, resolve: async () => [{ address: '127.0.0.1', family: 4 }] }).sender.send(
    attemptTo(`http://hooks.example.com:${receiver.port}/hook`),
  )
  t.same(open, { kind: 'succeeded', status: 200, error: null }, 'with private networks allowed, the same name is delivered to')
})

t.test('the connection’s own check: a connection that reaches a forbidden address is closed before the request is written', async (t) => {
  const receiver = await startReceiver()
  // An agent whose lookup is not guarded, as if a resolver had been fooled: only the check on connect stands.
  const agent = guardConnections(new http.Agent({ keepAlive: true }))
  t.teardown(() => agent.destroy())
  const error = await new Promise<NodeJS.ErrnoException>((resolve) => {
    const request = http.request(receiver.url, { method: 'POST', agent }, () => resolve(new Error('answered') as NodeJS.ErrnoException))
    request.on('error', resolve)
    request.end('{}')
  })
  t.equal(error.message, 'the address 127.0.0.1 is not on the public internet')
  t.equal(receiver.requests.length, 0, 'the receiver saw no request')
})
