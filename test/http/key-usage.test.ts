// The in-memory side of last_used_at (src/http/key-usage.ts), with a writer the test controls:
// a failing database is logged once and retried at the next flush, never thrown; uses not yet
// due stay for a later flush; memory is bounded; closing flushes.
import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import type { KeyUse } from '../../src/db/repos/projects.js'
import { makeKeyUsage } from '../../src/http/key-usage.js'

function harness(options: { maxKeys?: number } = {}) {
  const clock = { now: 1_000_000 }
  const writes: KeyUse[][] = []
  const logged: string[] = []
  const state = { failing: false, pending: [] as string[] }
  const log = { warn: (_: unknown, message: string) => logged.push(`warn ${message}`), info: (message: string) => logged.push(`info ${message}`) } as unknown as FastifyBaseLogger
  const usage = makeKeyUsage({
    write: async (uses) => {
      if (state.failing) throw Object.assign(new Error('select ... secret'), { code: 'ECONNREFUSED' })
      writes.push(uses)
      return { pending: state.pending }
    },
    log,
    now: () => clock.now,
    intervalMs: 3_600_000,
    ...options,
  })
  t.teardown(() => usage.close())
  return { usage, clock, writes, logged, state }
}

const times = (uses: KeyUse[]) => Object.fromEntries(uses.map((u) => [u.keyHash, u.usedAt.getTime()]))

t.test('one write for all keys, each with its latest use; nothing when nothing was noted', async (t) => {
  const h = harness()
  h.usage.record('a')
  h.clock.now += 10
  h.usage.record('b')
  h.clock.now += 10
  h.usage.record('a')
  await h.usage.flush()
  t.same(h.writes.map(times), [{ a: 1_000_020, b: 1_000_010 }])
  await h.usage.flush()
  t.equal(h.writes.length, 1, 'an empty flush writes nothing')
})

t.test('a failing database is logged once, never thrown, and the uses are retried at the next flush', async (t) => {
  const h = harness()
  h.usage.record('a')
  h.state.failing = true
  await h.usage.flush()
  h.clock.now += 5
  h.usage.record('b')
  await h.usage.flush()
  await h.usage.flush()
  t.same(h.logged, ['warn could not record API key uses (last_used_at); retrying at the next flush'], 'logged once for the outage')
  t.notOk(h.logged.join().includes('secret'), 'no message of the driver (it may hold the query)')
  h.state.failing = false
  await h.usage.flush()
  t.same(h.writes.map(times), [{ a: 1_000_000, b: 1_000_005 }], 'nothing was lost')
  t.same(h.logged.at(-1), 'info API key uses are recorded again')
})

t.test('uses the database did not write yet (their minute is not over) stay for a later flush, unless a later one came', async (t) => {
  const h = harness()
  h.usage.record('a')
  h.usage.record('b')
  h.state.pending = ['a', 'b']
  await h.usage.flush()
  h.clock.now += 100
  h.usage.record('b')
  h.state.pending = []
  await h.usage.flush()
  t.same(h.writes.map(times), [
    { a: 1_000_000, b: 1_000_000 },
    { a: 1_000_000, b: 1_000_100 },
  ])
})

t.test('memory is bounded: past maxKeys, new keys wait; keys already noted are still updated', async (t) => {
  const h = harness({ maxKeys: 2 })
  h.usage.record('a')
  h.usage.record('b')
  h.clock.now += 1
  h.usage.record('c')
  h.usage.record('a')
  await h.usage.flush()
  t.same(h.writes.map(times), [{ a: 1_000_001, b: 1_000_000 }])
  h.usage.record('c')
  await h.usage.flush()
  t.same(times(h.writes[1]!), { c: 1_000_001 }, 'room again after the flush')
})

t.test('close flushes what was noted', async (t) => {
  const h = harness()
  h.usage.record('a')
  await h.usage.close()
  t.same(h.writes.map(times), [{ a: 1_000_000 }])
})
