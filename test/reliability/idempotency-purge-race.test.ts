// Expired Idempotency-Key records are purged inside a request's transaction (one stored answer in
// a hundred). Two such purges, or a purge and a request storing its answer under a key whose
// record has expired, hold rows of one another's: with waits both ways PostgreSQL aborts one
// (a deadlock, 40P01), a 500 for a write that was fine. A purge must skip the rows another
// transaction holds, never wait for them. The single-connection PGlite cannot show the race.
import t from 'tap'
import { call } from '../helpers/app.js'
import { pgApp, proProject, raceConnections } from './fixtures/pg.js'

t.test('a request reusing an expired key purges while another purge holds expired rows: 201, no deadlock', async (t) => {
  const { app, handle, applicationName } = await pgApp(t, { label: 'idempotency-purge', poolSize: 4 })
  const { id: projectId, key } = await proProject(handle.db, 'Idempotency purge race')
  const { other, watcher, lockWaits } = raceConnections(t)
  // Records past their 24 hours: one the request's key reuses, two of other requests.
  await other`
    insert into idempotency_keys (scope, key, request_hash, state, response_status, response_body, created_at)
    values (${projectId}, 'reused', 'x', 'done', 201, '{}', now() - interval '25 hours'),
           (${projectId}, 'stale', 'x', 'done', 201, '{}', now() - interval '25 hours'),
           (${projectId}, 'free', 'x', 'done', 201, '{}', now() - interval '25 hours')`
  // Every stored answer purges, for this test.
  const random = Math.random
  Math.random = () => 0
  t.teardown(() => void (Math.random = random))

  let res: Promise<Awaited<ReturnType<typeof call>>> | undefined
  await other.begin(async (tx) => {
    // Another request's purge has taken the stale record, uncommitted.
    await tx`delete from idempotency_keys where scope = ${projectId} and key = 'stale'`
    let done = false
    res = call(t, app, { method: 'POST', url: '/v1/changelog', key, headers: { 'idempotency-key': 'reused' }, body: { title: 'Raced' } }).finally(() => (done = true))
    // The request stores its answer under the reused key, then purges: it must not wait for the
    // stale record. Should it wait, the other purge goes on to the reused key, which the request
    // holds, and one of the two is a deadlock's victim.
    await lockWaits({ applicationName }, 1, () => done)
    // The other purge reaches the reused key (while its record is still the expired one it sees).
    await tx`delete from idempotency_keys where scope = ${projectId} and key = 'reused' and created_at < now() - interval '24 hours'`
  })
  const answer = await res!
  t.equal(answer.status, 201, 'the write is answered')
  const [stored] = await other`select state, response_status from idempotency_keys where scope = ${projectId} and key = 'reused'`
  t.match(stored, { state: 'done', response_status: 201 }, 'its answer is stored under the key')
  const [free] = await watcher`select count(*)::int as n from idempotency_keys where scope = ${projectId} and key = 'free'`
  t.equal(free!.n, 0, 'and its purge removed the expired record nobody held')
})
