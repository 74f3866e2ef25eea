// When the database does not answer, database-backed routes and /readyz answer 503
// unavailable with Retry-After, and /healthz still answers 200.
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { call } from '../helpers/app.js'
import { newPgliteDataDir } from '../helpers/db.js'

const someKey = `fbk_${'a'.repeat(40)}`

t.test('PostgreSQL unreachable: 503 unavailable with Retry-After', async (t) => {
  // Nothing listens on port 1: every connection attempt is refused at once.
  const database = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none', connectTimeout: 2 })
  const app = await buildApp({ ...defaults, logLevel: 'silent' }, database)
  t.teardown(async () => {
    await app.close()
    await database.close()
  })
  const ready = await call(t, app, { url: '/readyz' })
  t.equal(ready.status, 503)
  t.equal(ready.json.code, 'unavailable')
  t.ok(Number(ready.headers['retry-after']) >= 1)
  const api = await call(t, app, { url: '/v1/changelog', key: someKey })
  t.equal(api.status, 503)
  t.equal(api.json.code, 'unavailable')
  t.notMatch(api.raw, /ECONNREFUSED|127\.0\.0\.1|select/i, 'no driver message reaches the client')
  const health = await call(t, app, { url: '/healthz' })
  t.equal(health.status, 200, '/healthz does not depend on the database')
})

t.test('embedded database closed: 503 unavailable', async (t) => {
  const database = await openDatabase({ loadDataDir: await newPgliteDataDir() })
  const app = await buildApp({ ...defaults, logLevel: 'silent' }, database)
  t.teardown(() => app.close())
  await database.close()
  const ready = await call(t, app, { url: '/readyz' })
  t.equal(ready.status, 503)
  t.equal(ready.json.code, 'unavailable')
})
