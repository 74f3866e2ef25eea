// Expired Idempotency-Key records are purged by the pruning job (jobs/event-pruning.ts), which
// every instance runs. A purge must skip the records another transaction holds, never wait for
// them: instances pruning at once hold each other's rows, and a request that reuses a key after
// its 24 hours holds its expired record while it stores its answer. Waits both ways made
// PostgreSQL abort one of two (a deadlock, 40P01), a 500 for a write that was fine (found by an
// outside review, when the purge ran in a request's transaction). The single-connection PGlite
// cannot show the race.
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { call } from '../helpers/app.js'
import { pgApp, proProject, raceConnections } from './fixtures/pg.js'

t.test('a purge skips the expired records other transactions hold, a request reusing an expired key meanwhile is answered', async (t) => {
  const { app, handle } = await pgApp(t, { label: 'idempotency-purge', poolSize: 4 })
  const { id: projectId, key } = await proProject(handle.db, 'Idempotency purge race')
  const { other, watcher } = raceConnections(t)
  // Records past their 24 hours: one a request's key reuses, one another purge holds, one free.
  await other`
    insert into idempotency_keys (scope, key, request_hash, state, response_status, response_body, created_at)
    values (${projectId}, 'reused', 'x', 'done', 201, '{}', now() - interval '25 hours'),
           (${projectId}, 'stale', 'x', 'done', 201, '{}', now() - interval '25 hours'),
           (${projectId}, 'free', 'x', 'done', 201, '{}', now() - interval '25 hours')`
  const repos = makeRepos(handle.db)
  await other.begin(async (tx) => {
    // Another instance's purge has taken the stale record, uncommitted.
    await tx`delete from idempotency_keys where scope = ${projectId} and key = 'stale'`
    // This purge must not wait for it: should it, this test ends at its timeout.
    const purged = await repos.idempotency.purgeExpired(100)
    t.ok(purged >= 2, `the records nobody held are purged (${purged}, other files' included)`)
  })
  const [left] = await watcher`select count(*)::int as n from idempotency_keys where scope = ${projectId}`
  t.equal(left!.n, 0, "the other purge's record went with its commit")
  const answer = await call(t, app, { method: 'POST', url: '/v1/changelog', key, headers: { 'idempotency-key': 'reused' }, body: { title: 'Reused after a day' } })
  t.equal(answer.status, 201, 'a key reused after its 24 hours is a new request')
})
