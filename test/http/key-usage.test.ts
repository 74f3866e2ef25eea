// The in-memory side of last_used_at (src/http/key-usage.ts), with a writer, a clock and timers
// the test controls: a key's first use is written at once and its next when its row's minute is
// over; a failing database is logged once and retried later, never thrown; uses not yet due stay
// for a later flush; memory is bounded; closing flushes.
import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import type { KeyUse } from '../../src/db/repos/projects.js'
import { makeKeyUsage } from '../../src/http/key-usage.js'
import { fileTeardown } from '../helpers/folder-suite.js'

function harness(options: { maxKeys?: number; wallClockOnly?: boolean } = {}) {
  const clock = { now: 1_000_000 }
  const writes: KeyUse[][] = []
  const logged: string[] = []
  const state = { failing: false, pending: [] as string[], notDue: [] as string[], inMs: 30_000 }
  /** The flushes the usage asked for, at the test's clock; the test runs them (fire). */
  const timers: { at: number; run: () => void; cancelled: boolean; ran: boolean }[] = []
  /** What the database holds of stopped instances' uses (api_key_deferred_uses). */
  const deferred = new Map<string, number>()
  const log = { warn: (_: unknown, message: string) => logged.push(`warn ${message}`), info: (message: string) => logged.push(`info ${message}`) } as unknown as FastifyBaseLogger
  const failIfDown = () => {
    if (state.failing) throw Object.assign(new Error('select ... secret'), { code: 'ECONNREFUSED' })
  }
  const usage = makeKeyUsage({
    write: async (uses) => {
      failIfDown()
      writes.push(uses)
      return {
        written: uses.map((use) => use.keyHash).filter((keyHash) => !state.pending.includes(keyHash) && !state.notDue.includes(keyHash)),
        pending: state.pending.map((keyHash) => ({ keyHash, inMs: state.inMs })),
        notDue: state.notDue.map((keyHash) => ({ keyHash, inMs: state.inMs })),
      }
    },
    defer: async (uses) => {
      failIfDown()
      for (const use of uses) deferred.set(use.keyHash, Math.max(deferred.get(use.keyHash) ?? 0, use.usedAt.getTime()))
    },
    takeDeferred: async () => {
      failIfDown()
      const taken = [...deferred].map(([keyHash, at]) => ({ keyHash, usedAt: new Date(at) }))
      deferred.clear()
      return taken
    },
    log,
    ...(options.wallClockOnly ? {} : { now: () => clock.now }),
    schedule: (run, delayMs) => {
      const timer = { at: clock.now + delayMs, run, cancelled: false, ran: false }
      timers.push(timer)
      return () => (timer.cancelled = true)
    },
    maxKeys: options.maxKeys,
  })
  fileTeardown(() => usage.close())
  /** The one flush asked for and not yet run or cancelled. */
  const next = () => {
    const live = timers.filter((timer) => !timer.cancelled && !timer.ran)
    if (live.length !== 1) throw new Error(`${live.length} flushes asked for`)
    return live[0]!
  }
  /** Moves the clock to the flush asked for and runs it. */
  async function fire() {
    const timer = next()
    clock.now = timer.at
    timer.ran = true
    timer.run()
    await usage.flush()
  }
  return { usage, clock, writes, logged, state, deferred, next, fire }
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

t.test("a key's first use is written at once; its next, once its row's minute is over", async (t) => {
  const h = harness()
  const start = h.clock.now
  t.equal(h.next().at, start + 1_000, 'an idle instance looks for handed-over uses a second after it starts')
  h.clock.now += 10
  h.usage.record('a')
  t.equal(h.next().at, h.clock.now, 'a first use: a flush at once')
  await h.fire()
  t.same(h.writes.map(times), [{ a: start + 10 }], 'written')
  const written = h.clock.now
  t.equal(h.next().at, written + 60_000, 'nothing noted: the next look for handed-over uses, a minute on')

  h.clock.now += 10_000
  h.usage.record('a')
  t.equal(h.next().at, written + 60_000, 'a use within the minute waits for it, and no sooner')
  h.clock.now += 5_000
  h.usage.record('a')
  await h.fire()
  t.same(h.writes.map(times), [{ a: start + 10 }, { a: written + 15_000 }], 'then the latest use is written, as the minute ends')
})

t.test('a use the database held back is written when it says the row may be', async (t) => {
  // Another instance wrote the row: the statement says when its minute is over, by the
  // database's clock, and the flush comes then, not a fixed interval later.
  const h = harness()
  h.usage.record('b')
  h.state.pending = ['b']
  h.state.inMs = 25_000
  await h.fire()
  const heldAt = h.clock.now
  t.equal(h.next().at, heldAt + 25_000, 'the next flush: when the row may be written')
  h.state.pending = []
  h.clock.now += 3_000
  h.usage.record('b')
  t.equal(h.next().at, heldAt + 25_000, 'a later use changes nothing')
  await h.fire()
  t.same(h.writes.map(times).at(-1), { b: heldAt + 3_000 }, 'the latest use, written')
})

t.test('a use too close to the stored one is dropped, and the key waits until a use could be written', async (t) => {
  // Another instance wrote the key's row with a use a moment before this one's: the statement
  // writes nothing and says when a use would be a minute after the stored one. The key's uses
  // until then ran a statement each, 100 ms apart (found by a review: about 100 times as many
  // statements as the minute allows).
  const h = harness()
  h.usage.record('c')
  h.state.notDue = ['c']
  h.state.inMs = 40_000
  await h.fire()
  const at = h.clock.now
  t.equal(h.next().at, at + 60_000, 'dropped: nothing left to flush but the look for handed-over uses')
  h.clock.now += 1_000
  h.usage.record('c')
  t.equal(h.next().at, at + 40_000, 'a later use waits until a use could be written')
  h.state.notDue = []
  await h.fire()
  t.same([h.writes.length, h.writes.map(times).at(-1)], [2, { c: at + 1_000 }], 'then tried, once')
})

t.test('a held-back use whose minute there is no room to remember is tried a second later, not every flush', async (t) => {
  // Found by a review: past the cap, such a key counted as unknown, and was tried again 100 ms
  // after each flush until its minute ended, about 600 statements a minute.
  const h = harness({ maxKeys: 1 })
  h.usage.record('a')
  await h.fire()
  h.usage.record('b')
  h.state.pending = ['b']
  await h.fire()
  t.equal(h.next().at, h.clock.now + 1_000, 'b: a second later')
})

t.test('when flushes run follows a clock no step of the wall clock moves', async (t) => {
  // Found by a review: with Date.now, a wall clock stepped back ten minutes put the next flush
  // ten minutes away, and nothing was written meanwhile.
  const h = harness({ wallClockOnly: true })
  h.usage.record('a')
  await h.usage.flush()
  const wall = Date.now
  t.teardown(() => void (Date.now = wall))
  Date.now = () => wall() - 600_000
  h.usage.record('b')
  const timers = h.next()
  t.ok(timers.at - h.clock.now <= 1_000, `the next flush is asked for within a second (${timers.at - h.clock.now} ms)`)
})

t.test('after a failed flush the next comes 10 s later, not at once', async (t) => {
  const h = harness()
  h.usage.record('c')
  h.state.failing = true
  await h.fire()
  const failedAt = h.clock.now
  t.equal(h.next().at, failedAt + 10_000, 'retried 10 s later')
  h.usage.record('d')
  t.equal(h.next().at, failedAt + 10_000, 'a new key does not bring it forward')
  h.state.failing = false
  await h.fire()
  t.same(h.writes.map(times), [{ c: failedAt, d: failedAt }], 'both written then')
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

t.test('close hands over the uses still to be written, and a flush takes them back', async (t) => {
  const h = harness()
  h.usage.record('a')
  h.usage.record('b')
  h.state.pending = ['a']
  await h.usage.close()
  t.same(h.writes.map(times), [{ a: 1_000_000, b: 1_000_000 }], 'the last flush wrote b, not a (its minute was not over)')
  t.same([...h.deferred], [['a', 1_000_000]], 'a is handed over, not dropped')

  // Another instance's flush: the handed-over use joins its own, the later one winning.
  const next = harness()
  for (const [keyHash, at] of h.deferred) next.deferred.set(keyHash, at)
  next.clock.now = 999_000
  next.usage.record('a')
  next.usage.record('c')
  await next.usage.flush()
  t.same(next.writes.map(times), [{ a: 1_000_000, c: 999_000 }])
  t.same([...next.deferred], [], 'taken')
})

t.test('a database that is down as the app closes: the loss is logged, nothing thrown', async (t) => {
  const h = harness()
  h.usage.record('a')
  h.state.failing = true
  await h.usage.close()
  t.match(h.logged, ['warn could not record API key uses (last_used_at); retrying at the next flush', /^warn could not hand over/])
})

t.test('handed-over uses are looked for at the first flush, then once a minute', async (t) => {
  const h = harness()
  await h.usage.flush()
  h.deferred.set('a', 999_000)
  await h.usage.flush()
  t.same(h.writes, [], 'not looked for again within the minute')
  h.clock.now += 60_000
  await h.usage.flush()
  t.same(h.writes.map(times), [{ a: 999_000 }], 'taken back once the minute has passed')
  t.same([...h.deferred], [])
})
