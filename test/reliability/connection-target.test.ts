// A database reached at an IPv6 address, or through the socket a query's host names, as libpq
// reads DATABASE_URL: postgres.js split `[::1]` at its first colon, and sent `host` to PostgreSQL
// as a setting, which refused the connection.
import { once } from 'node:events'
import { connect, createServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { openDatabase } from '../../src/db/client.js'

const base = new URL(process.env.DATABASE_URL!)
const SOCKET_DIR = '/var/run/postgresql'

async function answers(url: string): Promise<number | undefined> {
  const handle = await openDatabase({ databaseUrl: url, poolSize: 1 })
  try {
    // The migrations take a lock on connections of their own (migration-lock.ts).
    await handle.migrate()
    return await handle.statementTimeoutMs()
  } finally {
    await handle.close()
  }
}

t.test('at an IPv6 address', async (t) => {
  // PostgreSQL here listens on 127.0.0.1: a relay on [::1] stands for one listening there.
  const relay = createServer((client) => {
    const server = connect(Number(base.port || 5432), base.hostname)
    client.pipe(server).pipe(client)
    const end = () => (client.destroy(), server.destroy())
    client.on('error', end).on('close', end)
    server.on('error', end).on('close', end)
  })
  relay.listen(0, '::1')
  await once(relay, 'listening')
  t.teardown(() => relay.close())
  const url = new URL(base)
  url.host = `[::1]:${(relay.address() as AddressInfo).port}`
  t.type(await answers(url.toString()), 'number', url.host)
})

t.test("through the socket in the query's host, or escaped in the authority, whatever TLS the URL names", async (t) => {
  // The authority's host is left for the query's to replace, as libpq does; a socket has no TLS,
  // and the migrations' own connections tried it when the URL named sslmode (found by a review).
  const port = base.port || 5432
  for (const url of [
    `postgresql://${base.username}@unused${base.pathname}?host=${SOCKET_DIR}&port=${port}`,
    `postgresql://${base.username}@unused${base.pathname}?host=${SOCKET_DIR}&port=${port}&sslmode=require`,
    `postgresql://${base.username}@${encodeURIComponent(SOCKET_DIR)}:${port}${base.pathname}?sslmode=verify-full`,
  ]) {
    t.type(await answers(url), 'number', url)
  }
})
