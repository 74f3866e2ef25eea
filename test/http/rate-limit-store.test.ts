// The in-memory rate-limit store (src/http/rate-limit-store.ts): fixed windows per counter, and a
// capacity that crowds newcomers into one overflow counter instead of evicting anyone.
import t from 'tap'
import { boundedStore } from '../../src/http/rate-limit-store.js'

const WINDOW = 60_000

function store(capacity: number) {
  const clock = { at: 1_000_000 }
  const Store = boundedStore(capacity, () => clock.at)
  const s = new Store()
  const incr = (key: string) => new Promise<{ current: number; ttl: number }>((resolve) => s.incr(key, (_, r) => resolve(r!), WINDOW))
  const read = (key: string) => new Promise<{ current: number; ttl: number }>((resolve) => s.read(key, (_, r) => resolve(r!), WINDOW))
  return { s, clock, incr, read }
}

t.test('a counter counts within its window and starts again after it', async (t) => {
  const { clock, incr, read } = store(10)
  t.same(await incr('a'), { current: 1, ttl: WINDOW })
  clock.at += 20_000
  t.same(await incr('a'), { current: 2, ttl: 40_000 }, 'the window runs from the first request')
  t.same(await read('a'), { current: 2, ttl: 40_000 }, 'read does not count')
  t.same(await read('b'), { current: 0, ttl: 0 }, 'a key without a counter reads 0')
  clock.at += 40_000
  t.same(await incr('a'), { current: 1, ttl: WINDOW }, 'a new window at its end')
})

t.test('a full store never evicts: newcomers share one overflow counter', async (t) => {
  const { clock, incr } = store(2)
  for (let i = 0; i < 5; i++) await incr('a')
  await incr('b')
  const flood = []
  for (let i = 0; i < 1000; i++) flood.push((await incr(`random-${i}`)).current)
  t.same(flood.slice(0, 3), [1, 2, 3], 'newcomers count together')
  t.equal((await incr('a')).current, 6, 'the counters already there keep counting')
  t.equal((await incr('b')).current, 2)
  clock.at += WINDOW
  t.equal((await incr('late')).current, 1, 'expired counters make room for newcomers')
  t.equal((await incr('a')).current, 1)
})

t.test("in a full store, a key without a counter of its own reads 0, not the overflow's count", async (t) => {
  const { incr, read } = store(1)
  await incr('a')
  await incr('newcomer')
  await incr('newcomer')
  t.same(await read('never-seen'), { current: 0, ttl: 0 }, 'a key never counted: 0 (the guard looks it up)')
  t.same(await read('newcomer'), { current: 0, ttl: 0 }, 'one counted in the overflow: 0 too, its count is not its own')
  t.equal((await read('a')).current, 1, 'a key with a counter of its own reads it')
})

t.test('each child is a store of its own', async (t) => {
  const { s, incr } = store(1)
  await incr('a')
  const child = s.child()
  const current = await new Promise<number>((resolve) => child.incr('a', (_, r) => resolve(r!.current), WINDOW, 10))
  t.equal(current, 1)
})
