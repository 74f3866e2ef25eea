// The postgres.js patch (patches/postgres+3.4.9.patch; patches/README.md lists its changes): one
// test per change, named by the change's marker. Each drives the driver, through its public API,
// into the state its change fixes, and fails on the driver without that change (the report of
// issue #13 shows each run). Most use a fake PostgreSQL server
// (fixtures/fake-postgres.ts) so that a connection is cut at exactly the moment that matters;
// where the moment is "between two events of one socket", the test relies only on the order in
// which Node's event loop delivers them (poll: the read fails and 'error' follows on the next
// tick; check: setImmediate callbacks; close: the socket's 'close'), never on how fast this
// machine is. One connection (max: 1) makes the pool's choice of connection deterministic.
import postgres, { type Sql } from 'postgres'
import t, { type Test } from 'tap'
import { freshPostgresDatabase, postgresTestUrl } from '../helpers/db.js'
import { fakePostgres, type FakeConnection } from './fixtures/fake-postgres.js'

interface Tracked {
  state: 'pending' | 'fulfilled' | 'rejected'
  value?: unknown
  error?: { code?: string }
}

/** A promise's outcome, readable synchronously. */
function track(promise: PromiseLike<unknown>): Tracked {
  const tracked: Tracked = { state: 'pending' }
  promise.then(
    (value) => Object.assign(tracked, { state: 'fulfilled', value }),
    (error: { code?: string }) => Object.assign(tracked, { state: 'rejected', error }),
  )
  return tracked
}

/** A fake server and a client of one connection; `closed` resolves each time that connection closes. */
async function fakeSetup(t: Test, onQuery: (text: string, connection: FakeConnection) => void) {
  const server = await fakePostgres(onQuery)
  let closes: (() => void)[] = []
  const sql = postgres(server.url, {
    max: 1,
    fetch_types: false,
    connect_timeout: 2,
    backoff: () => 0,
    onnotice: () => {},
    onclose: () => {
      for (const resolve of closes) resolve()
      closes = []
    },
  })
  t.teardown(async () => {
    await sql.end({ timeout: 0 })
    await server.close()
  })
  const closed = () => new Promise<void>((resolve) => closes.push(resolve))
  return { server, sql, closed }
}

const rowsOf = (sql: Sql, text: string) =>
  sql.unsafe(text).then(
    (rows) => [...rows],
    (error: { code?: string }) => `error ${error.code}`,
  )

t.test('rows-reset (#1119, #1181): a query failing after some of its rows leaves the next query its own rows only', async (t) => {
  const { sql } = await fakeSetup(t, (text, c) => {
    if (text === 'fails after three rows') {
      c.rows(['i'], [['1'], ['2'], ['3']])
      c.error('ERROR', '22012', 'division by zero')
      c.ready()
    } else c.answer(['x'], [['1'], ['2']])
  })
  t.equal(await rowsOf(sql, 'fails after three rows'), 'error 22012', 'the first query fails')
  const next = await rowsOf(sql, 'two rows')
  t.same(next, [{ x: '1' }, { x: '2' }], 'the next query gets exactly its two rows, no holes before them')
})

t.test("closed-state (#1119, #1130): a backend killed mid-result: the next query gets its own answer, not the killed query's FATAL error", async (t) => {
  const { server, sql } = await fakeSetup(t, (text, c) => {
    if (text === 'killed') {
      // What PostgreSQL sends on pg_terminate_backend while a result is open.
      c.rows(['i'], [['1'], ['2']])
      c.error('FATAL', '57P01', 'terminating connection due to administrator command')
      c.close()
    } else c.answer(['one'], [['1']])
  })
  t.equal(await rowsOf(sql, 'killed'), 'error CONNECTION_CLOSED', 'the killed query fails as unavailable')
  t.same(await rowsOf(sql, 'select 1'), [{ one: '1' }], 'the next query gets its own row')
  t.equal(server.connections.length, 2, 'on a new connection')
})

t.test('fail-after-error (#1208, #1215): a query handed to a connection between its socket error and close fails; it never waits forever', async (t) => {
  const { server, sql, closed } = await fakeSetup(t, (text, c) => {
    if (text === 'reset') c.reset()
    else c.answer(['x'], [[text]])
  })
  // A connection's first query runs while the pool still counts it as connecting; from its
  // second on, the pool counts it busy and queues new queries on it.
  t.same(await rowsOf(sql, 'warm'), [{ x: 'warm' }])
  const connectionClosed = closed()
  let late: Tracked | undefined
  // The read fails with ECONNRESET and 'error' rejects the query on the next tick; the socket's
  // 'close' comes later in the same turn of the event loop. The pool still counts the connection
  // as busy, so the query made in between is queued on it.
  const first = await sql.unsafe('reset').then(
    () => 'no error',
    (error: { code?: string }) => ((late = track(sql.unsafe('made between error and close'))), error.code),
  )
  t.equal(first, 'ECONNRESET')
  await connectionClosed
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(late?.state, 'rejected', 'the query made between the error and the close has failed by the time the connection is closed')
  t.equal(late?.error?.code, 'CONNECTION_CLOSED', 'as unavailable')
  t.same(await rowsOf(sql, 'after'), [{ x: 'after' }], 'and the connection serves the next query')
  t.equal(server.connections.length, 2)
})

t.test('write-timer (#1133): a connection closed with a write still buffered reconnects, instead of never sending its startup message', async (t) => {
  const { server, sql, closed } = await fakeSetup(t, (text, c) => {
    if (text === 'reset') c.reset()
    else c.answer(['x'], [[text]])
  })
  t.same(await rowsOf(sql, 'warm'), [{ x: 'warm' }])
  const connectionClosed = closed()
  let late: Tracked | undefined
  // Made from a setImmediate callback, after the ECONNRESET and before 'close': its bytes wait
  // for the next turn's flush, and 'close' comes first.
  await sql.unsafe('reset').catch(
    () => new Promise<void>((resolve) => setImmediate(() => ((late = track(sql.unsafe('buffered at close'))), resolve()))),
  )
  await connectionClosed
  t.same(await rowsOf(sql, 'after'), [{ x: 'after' }], 'the next query reconnects and gets its answer (not CONNECT_TIMEOUT)')
  t.equal(server.connections.length, 2, 'the second connection completed its startup')
  t.equal(late?.state, 'rejected', 'the buffered query failed')
})

t.test('closed-socket (#1133, #1208): a backend killed during a transaction fails the transaction; the process does not crash', async (t) => {
  const { sql } = await fakeSetup(t, (text, c) => {
    if (text === 'killed') {
      c.error('FATAL', '57P01', 'terminating connection due to administrator command')
      c.close()
    } else if (text.startsWith('begin')) {
      c.complete('BEGIN')
      c.ready()
    } else c.answer(['x'], [[text]])
  })
  const uncaught: Error[] = []
  const record = (error: Error) => uncaught.push(error)
  process.on('uncaughtException', record)
  t.teardown(() => process.off('uncaughtException', record))
  t.same(await rowsOf(sql, 'warm'), [{ x: 'warm' }])
  // The statement fails once the connection has closed; begin() then sends its ROLLBACK to it.
  const transaction = await sql.begin((tx) => tx.unsafe('killed')).then(
    () => 'committed',
    (error: { code?: string }) => error.code,
  )
  t.equal(transaction, 'CONNECTION_CLOSED', 'the transaction fails as unavailable')
  await new Promise((resolve) => setImmediate(resolve)) // where the ROLLBACK's write was flushed
  await new Promise((resolve) => setImmediate(resolve))
  t.same(uncaught.map((error) => error.message), [], 'nothing is thrown outside the query (unpatched: a TypeError from nextWrite)')
  t.same(await rowsOf(sql, 'after'), [{ x: 'after' }], 'and the pool serves the next query')
})

t.test("queue (reported upstream by issue #13's note): the pool's bookkeeping per query does not grow with the queries run", async (t) => {
  // Under load below the pool's size, some connection is always idle, so the pool's queue of
  // idle connections never empties. Unpatched, each query left a slot in that queue's array
  // (8 bytes a query, never freed) and each move of a connection searched all of them: memory
  // and CPU per query grew with every query the process had run. Counted here through
  // Array.prototype.indexOf, which the queues use to find a connection: elements compared, and
  // the length of the arrays searched.
  const server = await fakePostgres((text, c) => c.answer(['x'], [['1']]))
  const pool = postgres(server.url, { max: 2, fetch_types: false, onnotice: () => {} })
  t.teardown(async () => {
    await pool.end({ timeout: 0 })
    await server.close()
  })
  await Promise.all([pool.unsafe('open'), pool.unsafe('both')]) // both connections open and idle

  const isConnection = (x: unknown) => typeof x === 'object' && x !== null && 'execute' in x && 'idleTimer' in x
  const indexOf = Array.prototype.indexOf
  let compared = 0
  let longest = 0
  Array.prototype.indexOf = function (this: unknown[], x: unknown, from?: number) {
    if (isConnection(x)) {
      compared += this.length - (from ?? 0)
      longest = Math.max(longest, this.length)
    }
    return indexOf.call(this, x, from)
  }
  try {
    for (let i = 0; i < 4000; i++) await pool.unsafe('one at a time')
    compared = 0
    for (let i = 0; i < 1000; i++) await pool.unsafe('one at a time')
  } finally {
    Array.prototype.indexOf = indexOf
  }
  t.ok(compared / 1000 <= 16, `a query compares a few elements, not one per query run before it (${compared / 1000})`)
  // The patched queue drops its holes once there are 1,024 and they are half its array.
  t.ok(longest <= 2048, `no queue's array grows with the queries run (longest ${longest} after 5,000 queries)`)
})

t.test("begin-reserve (#823, #1210): a BEGIN that fills its connection's pipeline still reserves the connection for its transaction", async (t) => {
  // Unpatched, sql.begin reserved its connection only when another statement could still have
  // been pipelined behind the BEGIN: here the BEGIN is the second statement sent to a connection
  // whose pipeline holds two, so it failed with UNSAFE_TRANSACTION and left that connection in an
  // open transaction, still pooled. The pool's next writes on it answered as done and were rolled
  // back when the connection closed.
  const url = await postgresTestUrl()
  const application = `begin-reserve-${process.pid}`
  const options = { max: 2, fetch_types: false, onnotice: () => {}, connection: { application_name: application } }
  const sql = postgres(url, { ...options, ...({ max_pipeline: 2 } as object) })
  const watcher = postgres(url, { max: 1, onnotice: () => {} })
  const table = `begin_reserve_${process.pid}`
  await watcher`create table ${watcher(table)} (n int)`
  t.teardown(async () => {
    await sql.end({ timeout: 5 })
    await watcher`drop table if exists ${watcher(table)}`
    await watcher.end({ timeout: 5 })
  })
  await Promise.all([sql`select pg_sleep(0.01)`, sql`select pg_sleep(0.01)`]) // both connections open

  // Sent at once, before any answer can be read: one statement running and one in the pipeline on
  // each connection, and the BEGIN after them.
  const busy = Array.from({ length: 4 }, () => sql`select pg_sleep(0.05)`.execute())
  const transaction = sql
    .begin(async (tx) => {
      await tx`insert into ${tx(table)} values (0)`
      return 'committed'
    })
    .then(
      (outcome) => outcome,
      (error: { code?: string }) => `error ${error.code}`,
    )
  await Promise.all(busy)
  t.equal(await transaction, 'committed', 'the transaction runs and commits')
  // The pool's own statements, on both connections, each committed when it answers.
  await Promise.all([1, 2, 3, 4].map((n) => sql`insert into ${sql(table)} values (${n})`))
  const [open] = await watcher`
    select count(*)::int as n from pg_stat_activity where application_name = ${application} and state like 'idle in transaction%'`
  t.equal(open!.n, 0, 'no pooled connection is left in a transaction')
  const rows = await watcher`select n from ${watcher(table)} order by n`
  t.same(rows.map((row) => row.n), [0, 1, 2, 3, 4], 'every write is committed, as answered')
})

t.test('commit-rollback (#1217): a transaction whose COMMIT PostgreSQL answers with ROLLBACK fails; it is never answered as committed', async (t) => {
  // A COMMIT that fails on its way (its named statement gone: behind PgBouncer in transaction
  // mode with DB_PREPARE=true, each connection of the pool meets server connections that never
  // prepared it) aborts the transaction; postgres.js sends it again, and PostgreSQL answers the
  // COMMIT of an aborted transaction with the tag ROLLBACK and no error. Unpatched, begin()
  // resolved, and the API answered 201 for writes that were never committed (found by a fleet
  // review). Here the named COMMIT is dropped in the transaction itself (DEALLOCATE ALL).
  const url = await postgresTestUrl()
  const sql = postgres(url, { max: 1, fetch_types: false, onnotice: () => {} })
  const table = `commit_rollback_${process.pid}`
  await sql`create table ${sql(table)} (n int)`
  t.teardown(async () => {
    await sql`drop table if exists ${sql(table)}`
    await sql.end({ timeout: 5 })
  })
  t.equal(await sql.begin(async (tx) => (await tx`select 1 as one`, 'committed')), 'committed', 'a first transaction prepares the COMMIT on the connection')
  const outcome = await sql
    .begin(async (tx) => {
      await tx`insert into ${tx(table)} values (1)`
      await tx.unsafe('deallocate all')
      return 'committed'
    })
    .then(
      (value) => value,
      (error: { code?: string }) => `error ${error.code}`,
    )
  t.equal(outcome, 'error 40000', 'the transaction fails')
  t.same([...(await sql`select n from ${sql(table)}`)], [], 'and nothing of it was committed')
})

/** A database of the test's own, a client for its DDL, and a client of one connection that prepares its statements. */
async function preparingClient(t: Test) {
  const url = await freshPostgresDatabase(t)
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  const sql = postgres(url, { max: 1, prepare: true, fetch_types: false, onnotice: () => {} })
  t.teardown(() => Promise.all([sql.end({ timeout: 5 }), admin.end({ timeout: 5 })]))
  return { admin, sql }
}

t.test('retry-in-pipeline (issue #13\'s note): statements whose plans went stale, retried on a pipelined connection, each get their own rows', async (t) => {
  // A column's type changes under prepared statements (a migration run by another instance):
  // each fails once with 0A000 and postgres.js runs it again. It sent the retry as Parse and
  // Describe first, its Bind after PostgreSQL answered; the statements pipelined behind it were
  // answered in between and taken for its answer (found by a review of a rolling migration).
  const { admin, sql } = await preparingClient(t)
  await admin.unsafe('create table a (id text primary key, n int); create table b (id text primary key, m int)')
  await admin.unsafe("insert into a select 'a' || i, i from generate_series(1, 20) i; insert into b select 'b' || i, -i from generate_series(1, 20) i")
  const readA = (i: number) => sql<{ id: string; n: number }[]>`select id, n from a where id = ${`a${i}`}`
  const readB = (i: number) => sql<{ id: string; m: number }[]>`select id, m from b where id = ${`b${i}`}`
  await readA(1)
  await readB(1)
  for (const collation of ['C', 'default']) {
    await admin.unsafe(`alter table a alter column id set data type text collate "${collation}"`)
    await admin.unsafe(`alter table b alter column id set data type text collate "${collation}"`)
    // Forty statements at once on the one connection: pipelined behind the first, which fails stale.
    // Without the change some also never settle: 20 s (they take milliseconds) says so rather than
    // the file's timeout.
    const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref())
    const answers = await Promise.race([hung, Promise.all(
      Array.from({ length: 20 }, (_, k) => k + 1).flatMap((i) => [
        readA(i).then((rows) => ({ asked: `a${i}`, got: rows.map((r) => `${r.id}:${r.n}`) }), (error: { code?: string }) => ({ asked: `a${i}`, got: [`error ${error.code}`] })),
        readB(i).then((rows) => ({ asked: `b${i}`, got: rows.map((r) => `${r.id}:${r.m}`) }), (error: { code?: string }) => ({ asked: `b${i}`, got: [`error ${error.code}`] })),
      ]),
    )])
    if (answers === 'hung') return void t.fail(`after the change to ${collation}: statements never answered`)
    const wrong = answers.filter(({ asked, got }) => got.length !== 1 || got[0] !== `${asked}:${asked.startsWith('a') ? '' : '-'}${asked.slice(1)}`)
    t.same(wrong, [], `after the change to ${collation}: every statement answered with its own row`)
  }
})

t.test('retry-in-pipeline: a retried autocommit write never runs inside a transaction begun behind it', async (t) => {
  // Retried at once on its connection, a write went out after a BEGIN another caller had
  // pipelined behind it, ran in that transaction, and was rolled back with it while it was
  // answered as done (found by a review: about 1 in 70 writes lost while collations flipped).
  const { admin, sql } = await preparingClient(t)
  await admin.unsafe('create table li (id text primary key); create table lt (id text primary key)')
  let stop = false
  let n = 0
  const acknowledged: string[] = []
  const writes = async () => {
    while (!stop) {
      const id = `i${n++}`
      const rows = await sql`insert into li (id) values (${id}) returning id`.catch(() => [])
      if (rows.length) acknowledged.push(id)
    }
  }
  const rolledBack = async () => {
    while (!stop) {
      await sql
        .begin(async (tx) => {
          await tx`select id from li where id = ${'i1'}`
          await tx`insert into lt (id) values (${`t${n++}`})`
          throw new Error('rolled back on purpose')
        })
        .catch(() => undefined)
    }
  }
  const load = [...Array(6)].map(writes).concat([...Array(2)].map(rolledBack))
  // Each change comes after 20 more writes were answered, however fast the cores are (it came
  // after 100 ms, in which a busy machine answered too few: CI saw 85 writes in all).
  // Writes that stop being answered fail here, by name, not at tap's timeout (as the other tests' 20 s).
  const answered = async (more: number): Promise<boolean> => {
    const target = acknowledged.length + more
    const giveUp = Date.now() + 20_000
    while (acknowledged.length < target && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 5))
    return acknowledged.length >= target
  }
  for (const collation of ['C', 'default', 'C', 'default', 'C', 'default']) {
    if (!(await answered(20))) {
      stop = true
      return void t.fail(`before the change to ${collation}: writes stopped being answered`)
    }
    await admin.begin(async (tx) => {
      await tx.unsafe(`alter table li alter column id set data type text collate "${collation}"`)
      await tx.unsafe(`alter table lt alter column id set data type text collate "${collation}"`)
    })
  }
  const lastAnswered = await answered(20)
  stop = true
  if (!lastAnswered) return void t.fail('after the last change: writes stopped being answered')
  await Promise.all(load)
  const stored = new Set((await admin<{ id: string }[]>`select id from li`).map((r) => r.id))
  t.same(acknowledged.filter((id) => !stored.has(id)), [], `every acknowledged write is stored (${acknowledged.length})`)
})

t.test('retry-in-pipeline: a retry waits while a statement sent to be described first waits for its Bind', async (t) => {
  // The stale statement fails and is retried while a statement this connection has not prepared
  // yet (sent as Parse and Describe, its Bind to follow) is in flight: the retry's answers were
  // taken for that statement's, and its rows and row description for the retry's (found by a review).
  const { admin, sql } = await preparingClient(t)
  await admin.unsafe("create table a (id text primary key, n int); create table c (id text primary key, v text)")
  await admin.unsafe("insert into a select 'a' || i, i from generate_series(1, 5) i; insert into c select 'c' || i, 'v' || i from generate_series(1, 5) i")
  const readA = (i: number) => sql<{ id: string; n: number }[]>`select id, n from a where id = ${`a${i}`}`
  const readC = (i: number) => sql<{ id: string; v: string }[]>`select id, v from c where id = ${`c${i}`}`
  const outcome = (query: Promise<Array<Record<string, unknown>>>) => query.then((rows) => JSON.stringify([...rows]), (error: { code?: string; message?: string }) => `error ${error.code ?? error.message}`)
  await readA(1)
  await admin.unsafe('alter table a alter column id set data type text collate "C"')
  const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref())
  const answers = await Promise.race([hung, Promise.all([outcome(readA(2)), outcome(readC(3)), outcome(readA(4)), outcome(readC(5))])])
  t.same(answers, ['[{"id":"a2","n":2}]', '[{"id":"c3","v":"v3"}]', '[{"id":"a4","n":4}]', '[{"id":"c5","v":"v5"}]'], 'each its own row')
  t.same(await outcome(readC(1)), '[{"id":"c1","v":"v1"}]', 'and the statement described meanwhile keeps its own columns')
})

t.test('retry-in-pipeline: a retried statement binds the values it was given, not their text serialised again', async (t) => {
  // Bind() replaces a statement's parameters with their text; the retry bound that text again:
  // true became false, a JSON object a JSON string (found by a review; a portal query on
  // `beta_enabled = true` then found nothing after a migration).
  const { admin, sql } = await preparingClient(t)
  await admin.unsafe("create table rp (id text primary key, flag boolean, doc jsonb); insert into rp values ('r1', false, '{}')")
  const write = (n: number) => sql`update rp set flag = ${true}, doc = ${sql.json({ n })} where id = ${'r1'} returning id`
  const read = async () => [...(await admin<{ flag: boolean; doc: unknown }[]>`select flag, doc from rp where id = 'r1'`)]
  await write(1)
  await admin.unsafe('alter table rp alter column id set data type text collate "C"')
  t.same([...(await write(2))], [{ id: 'r1' }], 'the stale update is retried')
  t.same(await read(), [{ flag: true, doc: { n: 2 } }], 'with the values it was given')
})

t.test('retry-in-pipeline: a statement whose parameter types changed is described anew and run, and the statements pipelined with it keep their answers', async (t) => {
  // Its retry needs a Describe first (transformAssignedExpr: the new types), which the pool
  // allows only with nothing pipelined behind it: handed back to the pool, it gets that.
  const { admin, sql } = await preparingClient(t)
  await admin.unsafe("create table c (id text primary key, n text); insert into c select 'c' || i, i::text from generate_series(1, 20) i")
  const write = (id: string) => sql`update c set n = ${'7'} where id = ${id}`.then(() => 'updated', (error: { code?: string }) => `error ${error.code}`)
  const read = (i: number) => sql<{ id: string }[]>`select id from c where id = ${`c${i}`}`.then((rows) => rows.map((r) => r.id).join(), (error: { code?: string }) => `error ${error.code}`)
  t.equal(await write('c1'), 'updated')
  await read(1)
  await admin.unsafe('alter table c alter column n set data type integer using n::integer')
  const [first, ...reads] = await Promise.all([write('c2'), ...Array.from({ length: 20 }, (_, k) => read(k + 1))])
  t.equal(first, 'updated', 'the update runs, its parameter now of the column\'s type')
  t.same(reads, Array.from({ length: 20 }, (_, k) => `c${k + 1}`), 'the reads pipelined with it get their own rows')
  t.equal(await write('c3'), 'updated', 'and so it runs from then on')
})

t.test('on PostgreSQL itself: a backend terminated mid-result, then the next query on the reconnected connection gets its own answer', async (t) => {
  const url = await postgresTestUrl()
  const sql = postgres(url, { max: 1, fetch_types: false, onnotice: () => {} })
  const killer = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => Promise.all([sql.end({ timeout: 5 }), killer.end({ timeout: 5 })]))
  const pid = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid
  // Rows 1 and 2 come at once, row 3 sleeps: the backend is terminated while the result is open.
  const killed = sql`select i, pg_sleep(case when i = 3 then 60 else 0 end) from generate_series(1, 5) i`.then(
    () => 'no error',
    (error: { code?: string }) => error.code,
  )
  for (;;) {
    const [sleeping] = await killer`select 1 from pg_stat_activity where pid = ${pid} and wait_event = 'PgSleep'`
    if (sleeping) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const [terminated] = await killer`select pg_terminate_backend(${pid}) as ok`
  t.ok(terminated!.ok, 'the backend was terminated mid-result')
  // FATAL 57P01 and then a FIN, or a reset, depending on timing.
  t.ok(['CONNECTION_CLOSED', '57P01', 'ECONNRESET'].includes((await killed) ?? ''), `the killed query fails as unavailable (${await killed})`)
  const next = await sql`select 1 as one`.then(
    (rows) => [...rows],
    (error: { code?: string }) => `error ${error.code}`,
  )
  t.same(next, [{ one: 1 }], "the next query gets its own row, not the killed query's rows or error")
})
