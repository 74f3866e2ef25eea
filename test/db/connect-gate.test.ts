// The gate in front of the PostgreSQL pool (src/db/client.ts): one statement per connection
// until PostgreSQL answers, so that nothing queues behind a connection attempt; pipelined
// statements once it does; back to one per connection when it cannot be reached.
import t from 'tap'
import { ConnectGate } from '../../src/db/client.js'

/** Work that stays pending until settled by hand, recording when it started. */
function pending() {
  let resolve!: (value: unknown) => void
  let reject!: (error: unknown) => void
  const promise = new Promise((res, rej) => ((resolve = res), (reject = rej)))
  const work = { started: false, run: () => ((work.started = true), promise), resolve: (v: unknown) => resolve(v), reject: (e: unknown) => reject(e) }
  return work
}
const tick = () => new Promise((resolve) => setImmediate(resolve))
const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })

t.test('one statement per connection until PostgreSQL answers, then the pipeline depth', async (t) => {
  const gate = new ConnectGate(2, 4, 60_000)
  const first = Array.from({ length: 3 }, pending)
  const runs = first.map((w) => gate.run(w.run))
  await tick()
  t.same(first.map((w) => w.started), [true, true, false], 'cold: as many as the pool has connections')

  first[0]!.resolve('ok')
  t.equal(await runs[0], 'ok')
  await tick()
  t.ok(first[2]!.started, 'the waiting statement starts once a slot is free')
  const more = Array.from({ length: 7 }, pending)
  const moreRuns = more.map((w) => gate.run(w.run))
  await tick()
  t.same(more.map((w) => w.started), [true, true, true, true, true, true, false], 'answering: connections × depth in flight (2 × 4 = 8)')

  // PostgreSQL cannot be reached: the waiting statement fails at once, and so does new work.
  first[1]!.reject(refused())
  await t.rejects(runs[1]!, { code: 'ECONNREFUSED' })
  await t.rejects(moreRuns[6]!, { code: '08001' }, 'the waiting statement is refused (503 unavailable)')
  await t.rejects(gate.run(async () => 'never'), { code: '08001' }, 'and new work during the cool-down')
  for (const w of [first[2]!, ...more.slice(0, 6)]) w.resolve('late')
  await Promise.all([runs[2], ...moreRuns.slice(0, 6)])
})

t.test('after an outage, one probe; statements are pipelined again once it is answered', async (t) => {
  const gate = new ConnectGate(1, 8, 60_000)
  t.equal(await gate.run(async () => 'up'), 'up')
  await t.rejects(gate.run(async () => Promise.reject(refused())), { code: 'ECONNREFUSED' })
  await new Promise((resolve) => setTimeout(resolve, 1100)) // the cool-down
  const probe = pending()
  const probeRun = gate.run(probe.run)
  await tick()
  t.ok(probe.started, 'one request probes PostgreSQL')
  await t.rejects(gate.run(async () => 'never'), { code: '08001' }, 'others are refused while it is out')
  probe.resolve('up again')
  t.equal(await probeRun, 'up again')
  const after = [pending(), pending()]
  const afterRuns = after.map((w) => gate.run(w.run))
  await tick()
  t.same(after.map((w) => w.started), [true, true], 'answered: pipelined on the one connection')
  after.forEach((w) => w.resolve('ok'))
  t.same(await Promise.all(afterRuns), ['ok', 'ok'])
})
