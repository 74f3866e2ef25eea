// A migration run by a newer instance during a rolling deploy can change a column's type (0020
// changed the ids' collation): an older instance's statements prepared before then fail once
// with "cached plan must not change result type" (0A000). postgres.js prepares a statement
// again by itself outside a transaction; inside one, the transaction was aborted and the request
// answered 500 (found by a rolling-migration check). The transaction now runs once more.
import postgres from 'postgres'
import t from 'tap'
import { appOnFreshPostgres, call } from '../helpers/app.js'

t.test('a write in a transaction whose prepared statements went stale is run again, not answered 500', async (t) => {
  // One connection, so that the second request runs on the statements the first prepared.
  const { url, app, key } = await appOnFreshPostgres(t, { poolSize: 1 })
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => admin.end({ timeout: 5 }))

  const write = () => call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Entry', status: 'published' } })
  const program = () => call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Program' } })
  // Its transaction reads the project (for update) and inserts the endpoint: two statements that
  // go stale in one migration, so that one run more was not enough (found by a review).
  const endpoint = () => call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: 'https://hooks.example.com/x' } })
  t.equal((await write()).status, 201, 'prepared on the connection')
  t.equal((await program()).status, 201)
  t.equal((await endpoint()).status, 201)
  for (const collation of ['default', 'C']) {
    // What a migration does: the columns' type changes under the prepared statements.
    for (const [table, column] of [['changelog_entries', 'id'], ['beta_programs', 'id'], ['projects', 'id'], ['webhook_endpoints', 'id']]) {
      await admin.unsafe(`alter table ${table} alter column ${column} set data type text collate "${collation}"`)
    }
    const entry = await write()
    t.equal(entry.status, 201, `an entry written after the change to ${collation}`)
    t.equal((await program()).status, 201, 'a program too')
    t.equal((await endpoint()).status, 201, 'and an endpoint, whose transaction had two stale statements')
    t.equal((await call(t, app, { url: `/v1/changelog/${entry.json.data.id}`, key })).status, 200, 'and read')
  }
})
