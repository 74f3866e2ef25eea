// A key whose answer is stored replays it to every retry, also to retries that arrive together:
// each replay held the key's advisory lock while it read the answer, and a retry meeting that
// lock was told 409 idempotency_in_progress although nothing was running (found by a review of
// two instances behind a load balancer, where parallel retries are common). A held lock here
// stands for the other replay: PostgreSQL only, since PGlite has one session.
import postgres from 'postgres'
import t from 'tap'
import { appOnFreshPostgres, call } from '../helpers/app.js'

t.test('a stored answer is replayed while another request holds its key; a key without one still answers 409', async (t) => {
  const { url, app, key } = await appOnFreshPostgres(t)
  const other = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end({ timeout: 5 }))
  const post = (idempotencyKey: string) => call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Once' }, headers: { 'idempotency-key': idempotencyKey } })

  const first = await post('stored')
  t.equal(first.status, 201)
  const [entry] = await other<{ project_id: string }[]>`select project_id from changelog_entries where id = ${first.json.data.id}`
  const scope = entry!.project_id
  await other.begin(async (tx) => {
    for (const held of ['stored', 'running']) await tx`select pg_advisory_xact_lock(hashtextextended(${scope} || ' ' || ${held}, 0))`
    const replay = await post('stored')
    t.equal(replay.status, 201, 'the stored answer, not a 409')
    t.equal(replay.headers['idempotency-replayed'], 'true')
    t.same(replay.json, first.json)
    const running = await post('running')
    t.equal(running.status, 409, 'a key held with no answer stored: a request still running')
    t.equal(running.json.code, 'idempotency_in_progress')
    t.equal(running.headers['retry-after'], '1')
  })
  const [count] = await other<{ n: number }[]>`select count(*)::int as n from changelog_entries where project_id = ${scope}`
  t.equal(count!.n, 1, 'one entry written')

  // Seconds before its 24 hours are over, an answer may yet be replaced by a request that begins
  // after them: without the lock it is not replayed then (found by a review).
  await other`update idempotency_keys set created_at = now() - interval '24 hours' + interval '30 seconds' where scope = ${scope} and key = 'stored'`
  await other.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended(${scope} || ' ' || 'stored', 0))`
    const nearEnd = await post('stored')
    t.same([nearEnd.status, nearEnd.json.code], [409, 'idempotency_in_progress'], 'held, and about to expire: 409')
  })
  const free = await post('stored')
  t.same([free.status, free.headers['idempotency-replayed']], [201, 'true'], 'free: the key holder replays it')
})
