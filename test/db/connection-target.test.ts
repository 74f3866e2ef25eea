// DATABASE_URL's forms that postgres.js reads otherwise than libpq: IPv6 hosts, host and port in the query.
import t from 'tap'
import { connectionTarget } from '../../src/db/target.js'

t.test('a URL postgres.js reads as libpq does is handed on as it is', async (t) => {
  for (const url of ['postgres://u:p%2Fw@db:5433/app?sslmode=require', 'postgresql://db/app', 'postgres://a,b/app']) {
    t.same(connectionTarget(url).options, {}, url)
    t.equal(connectionTarget(url).url, url)
  }
  t.equal(connectionTarget('postgres://u:secret@db:5433/app').description, 'PostgreSQL at db:5433/app', 'no password')
})

t.test('an IPv6 host is given as an address, with its port', async (t) => {
  const target = connectionTarget('postgres://u:secret@[::1]:5433/app')
  t.same(target.options, { host: ['::1'], port: [5433] })
  t.equal(target.description, 'PostgreSQL at [::1]:5433/app')
  t.same(connectionTarget('postgres://u@[2001:db8::1]/app').options, { host: ['2001:db8::1'], port: [5432] }, 'the default port')
})

t.test("the query's host and port are where to connect, never settings sent to PostgreSQL", async (t) => {
  const socket = connectionTarget('postgresql:///app?host=/var/run/postgresql&application_name=x&sslmode=require')
  t.same(socket.options, { path: '/var/run/postgresql/.s.PGSQL.5432' })
  t.equal(socket.url, 'postgresql:///app?application_name=x', 'the other parameters stay but TLS, which a socket has not (as in libpq)')
  t.equal(socket.description, 'PostgreSQL at the socket in /var/run/postgresql (port 5432), database app')
  t.same(connectionTarget('postgresql:///app?host=/tmp/&port=6000').options, { path: '/tmp/.s.PGSQL.6000' })
  const named = connectionTarget('postgres://u@ignored:1/app?host=db&port=6000')
  t.same(named.options, { host: ['db'], port: [6000] }, 'the query wins over the authority, as in libpq')
  t.equal(named.url, 'postgres://u@ignored:1/app')
  t.same(connectionTarget('postgres://a,b/app?port=6000').options, { host: ['a', 'b'], port: [6000, 6000] })
})

t.test('more of the forms libpq reads: empty ports, lists in the query, a socket written with escapes', async (t) => {
  t.same(connectionTarget('postgres://u@db:6000/app?port=').options, { host: ['db'], port: [5432] }, 'an empty port is the default, as in libpq')
  t.same(connectionTarget('postgres://u@x/app?host=a,b&port=5433,5434').options, { host: ['a', 'b'], port: [5433, 5434] }, 'a port each')
  t.same(connectionTarget('postgres://u@x/app?host=a,b&port=5433').options, { host: ['a', 'b'], port: [5433, 5433] }, 'one port for all')
  t.same(connectionTarget('postgresql://u@%2Fvar%2Frun%2Fpostgresql/app').options, { path: '/var/run/postgresql/.s.PGSQL.5432' }, "the socket's directory, escaped in the host")
  // The query's host replaces the hosts only: the port before the path stays, as in libpq (found by a review).
  t.same(connectionTarget('postgresql://u@localhost:6000/app?host=/var/run/postgresql').options, { path: '/var/run/postgresql/.s.PGSQL.6000' })
  t.same(connectionTarget('postgresql://u@ignored:6000/app?host=127.0.0.1').options, { host: ['127.0.0.1'], port: [6000] })
  t.same(connectionTarget('postgresql://u@x/app?host=/tmp/&sslcert=c.pem&sslkey=k.pem').url, 'postgresql://u@x/app', 'no TLS parameter over a socket')
})
