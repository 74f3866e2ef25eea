// What the server, the admin CLI and db:migrate say when the database refuses them at start-up.
import { DrizzleQueryError } from 'drizzle-orm/errors'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { databaseStartProblem } from '../../src/db/start-problem.js'

const WHERE = 'PostgreSQL at 127.0.0.1:5432/app'
const refusal = (code: string, message: string) => Object.assign(new Error(message), { name: 'PostgresError', severity: 'ERROR', code })

t.test("PostgreSQL's refusal is found under Drizzle's wrapper, with its hint", async (t) => {
  // A migration's error comes wrapped, its SQLSTATE on the cause: the hint never showed, and the
  // start printed a stack (found by a review).
  const wrapped = new DrizzleQueryError('create table "x" ()', [], refusal('42501', 'permission denied for schema public'))
  t.equal(
    databaseStartProblem(wrapped, WHERE),
    `${WHERE} refused the start: permission denied for schema public (SQLSTATE 42501): the user in DATABASE_URL needs the right to create tables in this database.`,
  )
  t.equal(
    databaseStartProblem(refusal('3D000', 'database "app" does not exist'), WHERE),
    `${WHERE} refused the start: database "app" does not exist (SQLSTATE 3D000): create it (createdb), or set DATABASE_URL to a database that exists.`,
  )
})

t.test('an unreachable database is said so; an error of this machine (EPERM) is no SQLSTATE', async (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5999'), { code: 'ECONNREFUSED' })
  t.equal(databaseStartProblem(refused, WHERE), `${WHERE} cannot be reached (connect ECONNREFUSED 127.0.0.1:5999): start it, or set DATABASE_URL to a database that answers.`)
  t.equal(databaseStartProblem(Object.assign(new Error("EPERM: operation not permitted, mkdir '/sys/x'"), { code: 'EPERM' }), WHERE), undefined)
})

t.test("an unreachable database's line names the connection's error, never the statement or its parameters", async (t) => {
  // Drizzle's wrapper says "Failed query: <sql>\nparams: <values>": a backfill's values are
  // bodies, drafts among them, and the line was several (found by a review).
  const closed = Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' })
  const wrapped = new DrizzleQueryError('update "changelog_entries" set "body_html" = $1\nwhere "id" = $2', ['<p>secret draft</p>', 'ch_1'], closed)
  t.equal(databaseStartProblem(wrapped, WHERE), `${WHERE} cannot be reached (write CONNECTION_CLOSED 127.0.0.1:5432): start it, or set DATABASE_URL to a database that answers.`)
  const multiline = new DrizzleQueryError('select 1', [], refusal('28P01', 'password authentication failed for user "app"\nDETAIL: more'))
  t.equal(databaseStartProblem(multiline, WHERE), `${WHERE} refused the start: password authentication failed for user "app" (SQLSTATE 28P01): check the user and password in DATABASE_URL.`)
})

t.test('a 42501 at the connection is the CONNECT privilege, at a migration the right to create tables', async (t) => {
  // Both said "needs the right to create tables" (found by a review).
  const fatal = Object.assign(new Error('permission denied for database "app"'), { name: 'PostgresError', severity: 'FATAL', code: '42501' })
  t.equal(databaseStartProblem(fatal, WHERE), `${WHERE} refused the start: permission denied for database "app" (SQLSTATE 42501): the user in DATABASE_URL needs the CONNECT privilege on this database.`)
  t.match(databaseStartProblem(new DrizzleQueryError('create table x ()', [], refusal('42501', 'permission denied for schema public')), WHERE), /needs the right to create tables/)
})

t.test('a DATA_DIR that cannot be a directory is one line, not a stack', async (t) => {
  // A file in its place printed mkdir's EEXIST with its stack (found by an operations review).
  const { openDatabase } = await import('../../src/db/client.js')
  const { SetupError } = await import('../../src/config.js')
  const dir = mkdtempSync(join(tmpdir(), 'data-dir-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'file')
  writeFileSync(file, 'x')
  symlinkSync(join(dir, 'loop'), join(dir, 'loop'))
  for (const [dataDir, code] of [
    [file, 'EEXIST'],
    [join(file, 'sub'), 'ENOTDIR'],
    [join(dir, 'loop', 'x'), 'ELOOP'],
  ] as const) {
    const refusal = await openDatabase({ dataDir }).then(
      () => undefined,
      (error: unknown) => error,
    )
    t.ok(refusal instanceof SetupError, `${code}: a SetupError`)
    t.equal((refusal as Error).message, `DATA_DIR ${dataDir} cannot hold the embedded database (${code}: not a directory, or not one this process may create): fix it.`)
  }
})

t.test('a DATA_DIR this process cannot write is one line, not a stack', async (t) => {
  // A read-only file system printed writeFileSync's EROFS with its stack (found by a newcomer's
  // review). sysfs takes no new file, whoever asks (root included), read-only mounted or not.
  const { lockDataDir } = await import('../../src/db/data-dir-lock.js')
  const { SetupError } = await import('../../src/config.js')
  let refusal: unknown
  try {
    lockDataDir('/sys/kernel', 'a test')()
  } catch (error) {
    refusal = error
  }
  t.ok(refusal instanceof SetupError, 'a SetupError')
  t.match((refusal as Error).message, /^DATA_DIR \/sys\/kernel cannot hold the embedded database \(E[A-Z]+: read-only, not writable by this process, or full\): fix it\.$/)
})

t.test('a DATA_DIR that holds other files and no database is refused, and left as it was', async (t) => {
  // `DATA_DIR=.` filled the project's root with PostgreSQL's files (found by a newcomer's review).
  const { openDatabase } = await import('../../src/db/client.js')
  const { SetupError } = await import('../../src/config.js')
  const dir = mkdtempSync(join(tmpdir(), 'data-dir-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'README.md'), 'mine')
  const refusal = await openDatabase({ dataDir: dir }).then(
    () => undefined,
    (error: unknown) => error,
  )
  t.ok(refusal instanceof SetupError, 'a SetupError')
  t.equal((refusal as Error).message, `DATA_DIR ${dir} holds other files (README.md) and no embedded database: give it a new or empty directory.`)
  t.same(readdirSync(dir), ['README.md'], 'nothing was written there')

  // A volume mounted as DATA_DIR has a lost+found: it is a new directory all the same.
  const volume = mkdtempSync(join(tmpdir(), 'data-dir-'))
  t.teardown(() => rmSync(volume, { recursive: true, force: true }))
  mkdirSync(join(volume, 'lost+found'))
  const opened = await openDatabase({ dataDir: volume })
  t.teardown(() => opened.close())
  await opened.ping()
  t.ok(readdirSync(volume).includes('PG_VERSION'), 'a mounted volume is opened and the database made there')
})
