// The postgres.js patch in patches/ (porsager/postgres #1119, the fix of PR #1120 / #1190) is in
// the driver Node loads: a query that fails, or whose connection is killed, in the middle of its
// rows must not leave those rows, or its error, to the next query on that connection. Without
// the patch the API answered a valid key with 401 (the key lookup got a sparse result) or 500
// while connections were being killed. One connection (max: 1) makes both cases deterministic.
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import postgres from 'postgres'
import t from 'tap'
import { DATABASE_URL, uniqueName } from './fixtures/pg.js'

const client = () => {
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {}, connection: { application_name: uniqueName('driver') } })
  t.teardown(() => sql.end({ timeout: 5 }))
  return sql
}

t.test('a query failing after some of its rows leaves the next query its own rows only', async (t) => {
  const sql = client()
  // Rows 1 to 3 are sent, then row 4 divides by zero.
  const failed = await sql`select i, 1 / (4 - i) as boom from generate_series(1, 10) i`.then(
    () => 'no error',
    (error: { code?: string }) => error.code,
  )
  t.equal(failed, '22012', 'the first query fails with division by zero')
  const next = await sql`select x from generate_series(1, 2) x`
  t.same([...next], [{ x: 1 }, { x: 2 }], 'the next query gets exactly its two rows, no holes before them')
})

t.test('a connection killed in the middle of a result: the next query on the reconnected connection gets its own answer', async (t) => {
  const sql = client()
  const killer = client()
  const pid = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid
  // Rows 1 and 2 come at once, row 3 sleeps: the backend is killed while the result is open.
  const killed = sql`select i, pg_sleep(case when i = 3 then 5 else 0 end) from generate_series(1, 5) i`.then(
    () => 'no error',
    (error: { code?: string }) => error.code,
  )
  await sleep(500)
  const [terminated] = await killer`select pg_terminate_backend(${pid}) as ok`
  t.ok(terminated!.ok, 'the backend was terminated mid-result')
  t.ok(['CONNECTION_CLOSED', '57P01'].includes((await killed) ?? ''), `the killed query fails as unavailable (${await killed})`)
  const next = await sql`select 1 as one`
  t.same([...next], [{ one: 1 }], 'the next query gets its own row, not the killed query\'s rows or error')
  const again = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid
  t.not(again, pid, 'on a new backend')
})

t.test("postgres.js's connection queues stay correct, and searched from their live part, under steady pipelined load", async (t) => {
  // The patch: a connection moves between queues on every query; remove() searched every hole
  // shift() had left since the queue was last empty (5 % of a GET's CPU at 7 000 requests a
  // second, and growing) and the array was never compacted.
  const source = new URL('../../node_modules/postgres/src/queue.js', import.meta.url)
  const { default: Queue } = (await import(source.href)) as { default: <T>(initial?: T[]) => { length: number; push(x: T): T; shift(): T; remove(x: T): T | null } }
  const busy = Queue<string>(['a', 'b', 'c'])
  for (let i = 0; i < 5000; i++) busy.push(busy.shift()) // round robin, as the pool does
  t.equal(busy.length, 3)
  t.equal(busy.remove('b'), 'b', 'an element is found after thousands of moves')
  t.equal(busy.remove('b'), null, 'and only once')
  t.same([busy.shift(), busy.shift(), busy.length], ['c', 'a', 0], 'the order holds across compactions (5000 turns of three: c, a, b)')
  t.match(await readFile(source, 'utf8'), /xs\.indexOf\(x, index\)/, 'the ESM build Node loads carries the patch')
})
