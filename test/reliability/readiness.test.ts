// /readyz tells whether PostgreSQL answers, not whether the pool is free: it asks on a connection
// of its own. On the pool, a few writes waiting on one locked table filled every connection, its
// select 1 queued behind them past its 2 s, and the instance declared an outage (found by a
// review injecting faults: every instance behind a load balancer would have failed at once).
import postgres from 'postgres'
import t from 'tap'
import { appOnFreshPostgres, call } from '../helpers/app.js'

t.test('with every pooled connection waiting on a lock, /readyz answers 200 and no outage begins', async (t) => {
  const { url, app, key, handle } = await appOnFreshPostgres(t, { poolSize: 2 })
  // One session holds the lock; the other watches who waits on it.
  const locker = postgres(url, { max: 1, onnotice: () => {} })
  const watcher = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => Promise.all([locker.end({ timeout: 5 }), watcher.end({ timeout: 5 })]))
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Locked', status: 'active' } })
  t.equal(program.status, 201)
  const outages: unknown[] = []
  const stopWatching = handle.onAvailability((event) => outages.push(event))
  t.teardown(stopWatching)
  const enroll = (n: number) => call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: `t${n}@example.com` } })

  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let locked!: () => void
  const lockTaken = new Promise<void>((resolve) => (locked = resolve))
  const holder = locker.begin(async (tx) => {
    await tx`lock table beta_testers in exclusive mode`
    locked()
    await held
  })
  await lockTaken
  // Each enrollment holds a connection in its transaction, waiting on the lock: two fill the pool.
  const waiting = [enroll(1), enroll(2), enroll(3)]
  const waiters = async () => (await watcher<{ n: number }[]>`select count(*)::int as n from pg_locks where not granted and relation = 'beta_testers'::regclass`)[0]!.n
  while ((await waiters()) < 2) await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(await waiters(), 2, 'both pooled connections wait on the lock')
  const ready = await call(t, app, { url: '/readyz' })
  t.equal(ready.status, 200, '/readyz: PostgreSQL answers')
  release()
  await holder
  const enrolled = await Promise.all(waiting)
  t.same(enrolled.map((res) => res.status), [201, 201, 201], 'the writes go through once the lock is released')
  t.same(outages, [], 'no outage began')
})
