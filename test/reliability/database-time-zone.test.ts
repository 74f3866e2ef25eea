// The server's PostgreSQL sessions read and write timestamps in UTC whatever the database's own
// time zone: in Europe/Amsterdam, PostgreSQL writes a year-1000 date with its local mean time
// (`1000-01-01 00:19:32+00:19:32`), which no JavaScript Date parses, and the API answered 500
// for it, and for every page holding it (found by a review comparing the two databases).
import postgres from 'postgres'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { call } from '../helpers/app.js'
import { freshPostgresDatabase } from '../helpers/db.js'
import { fileTeardown, thisFile } from '../helpers/folder-suite.js'

t.test('a database in another time zone: dates of any year are written and read back as sent', async (t) => {
  const url = await freshPostgresDatabase(thisFile)
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  await admin.unsafe(`alter database ${new URL(url).pathname.slice(1)} set timezone to 'Europe/Amsterdam'`)
  await admin.end({ timeout: 5 })
  const handle = await openDatabase({ databaseUrl: url, poolSize: 2 })
  fileTeardown(() => handle.close())
  await handle.migrate()
  const app = await buildApp({ ...defaults, logLevel: 'silent' }, handle)
  t.teardown(() => app.close())
  const { apiKey: key } = await makeRepos(handle.db).projects.create({ name: 'Old dates', plan: 'pro', beta_enabled: false })

  for (const published_at of ['1000-01-01T00:00:00.000Z', '1700-06-01T12:00:00.000Z', '2026-07-01T10:00:00.000Z']) {
    const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Old', status: 'published', published_at } })
    t.equal(created.status, 201, `${published_at}: written`)
    t.equal(created.json.data.published_at, published_at, `${published_at}: answered as sent`)
    const read = await call(t, app, { url: `/v1/changelog/${created.json.data.id}`, key })
    t.equal(read.json.data.published_at, published_at, `${published_at}: read back as sent`)
  }
  const page = await call(t, app, { url: '/v1/changelog?limit=10', key })
  t.equal(page.status, 200, 'a page holding them answers')
  t.equal(page.json.data.length, 3)
})
