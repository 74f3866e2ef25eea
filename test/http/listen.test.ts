// HOST's every address is served by the one server buildApp set up, its connection rules with it.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { listenOnHost } from '../../src/http/listen.js'
import { ADMIN_TOKEN } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

/** Linux routes all of 127.0.0.0/8 to the loopback: a second address without IPv6. */
const SECOND = '127.0.0.2'
/** TEST-NET-1 (RFC 5737): an address no machine here has. */
const ABSENT = '192.0.2.1'

async function appWithLog() {
  const lines: { level: number; msg: string }[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean).map((line) => JSON.parse(line)))
      done()
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'info', adminToken: ADMIN_TOKEN }, await testDatabase(), { logger: { stream } })
  return { app, lines }
}

/** Writes `text` to host:port and returns what comes back before the server closes the connection. */
const exchange = (host: string, port: number, text: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect(port, host, () => socket.write(text))
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (answer += chunk))
    socket.on('end', () => resolve(answer))
    socket.on('error', reject)
  })

t.test('a name with two addresses: both served, each with the rules of the app server', async (t) => {
  const { app, lines } = await appWithLog()
  t.teardown(() => app.close())
  const stop = await listenOnHost(app, 'api.internal', 0, async () => ['127.0.0.1', SECOND, '127.0.0.1'])
  t.teardown(stop)
  const { port, address } = app.server.address() as AddressInfo
  t.equal(address, '127.0.0.1', 'the app listens at the first address')
  t.ok(lines.some((line) => line.msg === `Server listening at http://${SECOND}:${port}`), 'the second address at the same port, logged')

  // Accepted alike: half-open allowed, as Node's HTTP server accepts its own (and Nagle off, in the same options).
  const accepted: boolean[] = []
  app.server.on('connection', (socket: Socket) => accepted.push(socket.allowHalfOpen))
  for (const host of ['127.0.0.1', SECOND]) {
    t.match(await exchange(host, port, 'GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 200 /, `${host}: served`)
    t.equal(accepted.pop(), true, `${host}: half-open allowed`)
    // Each answered by a rule set on the app's server: a server of its own would close the
    // first unanswered, and answer the second with Node's bare 400.
    t.match(await exchange(host, port, 'CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\n'), /^HTTP\/1\.1 405 [^]*"code":"method_not_allowed"/, `${host}: CONNECT`)
    t.match(await exchange(host, port, 'GET /healthz HTTP/1.1\r\nHost: a\r\nBad header\r\n\r\n'), /^HTTP\/1\.1 400 [^]*application\/problem\+json[^]*"code":"validation_failed"/, `${host}: malformed`)
  }

  await stop()
  await t.rejects(exchange(SECOND, port, 'GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n'), { code: 'ECONNREFUSED' }, 'stopped: the second address no longer accepts')
  t.match(await exchange('127.0.0.1', port, 'GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 200 /, 'the first until the app closes')
})

t.test('an address this machine lacks is passed over with a warning, first or not; a port taken at one stops the start', async (t) => {
  const { app, lines } = await appWithLog()
  t.teardown(() => app.close())
  const stop = await listenOnHost(app, 'localhost', 0, async () => [ABSENT, '127.0.0.1', '::ffff:127.0.0.1'])
  t.teardown(stop)
  t.match(lines.find((line) => line.level === 40), { code: 'EADDRNOTAVAIL', msg: `not listening at ${ABSENT}, an address of localhost this machine does not have` })
  t.equal((app.server.address() as AddressInfo).address, '127.0.0.1', 'the first address it has')
  t.notOk(lines.some((line) => /listening at http:\/\/\[::ffff/.test(line.msg)), 'an IPv4-mapped address is its IPv4 one, listened on once')

  const { app: wild } = await appWithLog()
  t.teardown(() => wild.close())
  const stopWild = await listenOnHost(wild, 'everywhere', 0, async () => ['127.0.0.1', '0.0.0.0'])
  t.teardown(stopWild)
  t.equal((wild.server.address() as AddressInfo).address, '0.0.0.0', 'every IPv4 address takes in one of them: listened on once')

  const { app: none } = await appWithLog()
  t.teardown(() => none.close())
  await t.rejects(listenOnHost(none, 'elsewhere', 0, async () => [ABSENT]), { code: 'EADDRNOTAVAIL' }, 'none of its addresses: the start stops')

  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, SECOND, resolve))
  t.teardown(() => taken.close())
  const { app: second } = await appWithLog()
  t.teardown(() => second.close())
  const port = (taken.address() as AddressInfo).port
  await t.rejects(listenOnHost(second, 'api.internal', port, async () => ['127.0.0.1', SECOND]), { code: 'EADDRINUSE' })
})

t.test('an address as HOST is not looked up', async (t) => {
  const { app } = await appWithLog()
  t.teardown(() => app.close())
  const stop = await listenOnHost(app, '127.0.0.1', 0, async () => t.fail('looked up') as never)
  t.teardown(stop)
  t.equal((app.server.address() as AddressInfo).address, '127.0.0.1')
})
