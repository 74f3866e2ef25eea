// One database per test process (a lane's test files share one: test/helpers/folder-suite.ts):
// in-memory PGlite by default, or PostgreSQL when DATABASE_URL is set. Tests never truncate or
// share rows: each makes its own project.
import { and, eq, gt, NoopLogger, sql, type SQLWrapper } from 'drizzle-orm'
import { createHash, randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config.js'
import { openDatabase, type DbHandle } from '../../src/db/client.js'
import { changelog_entries } from '../../src/db/schema.js'
import { migrationsFolder } from '../../src/paths.js'
import { currentTestFile, fileTeardown, thisFile } from './folder-suite.js'
import { removeStaleCopies } from './temp-copies.js'

let shared: Promise<DbHandle> | undefined

export function testDatabase(): Promise<DbHandle> {
  if (!shared) {
    shared = process.env.DATABASE_URL ? migratedPostgres(process.env.DATABASE_URL) : migratedPglite()
    // PGlite keeps the process alive until it is closed.
    t.teardown(async () => (await shared!).close())
  }
  return shared
}

async function migratedPostgres(url: string): Promise<DbHandle> {
  // DB_PREPARE=false: the CI step that runs tests through PgBouncer in transaction mode.
  const handle = await openDatabase({ databaseUrl: url, poolSize: 10, prepare: loadConfig().dbPrepare })
  await handle.migrate()
  return handle
}

/** Connections of a newTestDatabase() pool on PostgreSQL. */
export const OWN_DATABASE_POOL_SIZE = 4

/**
 * A migrated database of the caller's own, for a test file that must share none (a webhook
 * dispatcher claims every due delivery of its database): on PostgreSQL a new database, dropped
 * once the file is done (fileTeardown); on PGlite a new in-memory one, loaded from the migrated
 * copy, closed then.
 */
export async function newTestDatabase(): Promise<DbHandle> {
  if (!process.env.DATABASE_URL) {
    const handle = await migratedPglite()
    fileTeardown(() => handle.close())
    return handle
  }
  const url = await freshPostgresDatabase(thisFile)
  const handle = await openDatabase({ databaseUrl: url, poolSize: OWN_DATABASE_POOL_SIZE, prepare: loadConfig().dbPrepare })
  // Closed before freshPostgresDatabase's teardown drops the database (teardowns run last first).
  fileTeardown(() => handle.close())
  await handle.migrate()
  return handle
}

const root = new URL('../..', import.meta.url).pathname

/**
 * Data directories of the embedded database that tests load instead of making: a new PGlite runs
 * initdb, about 3.7 s of CPU here, against 0.8 s to load a data directory (and a few milliseconds
 * to unpack one for a server). The first test process to need one makes it and saves it in the
 * temp directory as a `dumpDataDir()` tarball, written whole or not at all; every other process
 * loads that copy. A copy is named by a hash of what it was made from (the PGlite that wrote it,
 * since a data directory is read only by the version that wrote it, the code that opens it, and
 * for the migrated one the migrations and the code that applies them), so a change makes a new
 * one, never reuses a stale one; copies for other inputs (40 MB each) are removed once a day old.
 */
const SAVED = {
  /**
   * A new database, before any migration: PGlite's initdb, then a checkpoint, dumped (with the
   * settings openDatabase gives PGlite), which is what a first start finds once PGlite is up.
   */
  initdb: { prefix: 'feedback-test-pglite-initdb-', inputs: () => [] as string[] },
  /** Every migration applied: the shared test database. */
  migrated: {
    prefix: 'feedback-test-pglite-migrated-',
    inputs: () => [
      ...readdirSync(migrationsFolder, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name)),
      join(root, 'src/db/backfill.ts'),
    ],
  },
}

function savedFile(kind: keyof typeof SAVED): string {
  const hash = createHash('sha256')
  const files = [...SAVED[kind].inputs(), join(root, 'src/db/client.ts'), join(root, 'test/helpers/db.ts'), join(root, 'node_modules/@electric-sql/pglite/package.json')]
  for (const file of files.sort()) hash.update(file.slice(root.length)).update('\0').update(readFileSync(file)).update('\0')
  return join(tmpdir(), `${SAVED[kind].prefix}${hash.digest('hex').slice(0, 16)}.tar`)
}

function readSaved(file: string): Buffer | undefined {
  try {
    return readFileSync(file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    return undefined
  }
}

/** Saves the data directory of the in-memory PGlite `handle` as `kind`'s copy. */
async function save(kind: keyof typeof SAVED, file: string, handle: DbHandle): Promise<Buffer> {
  const client = (handle.db as unknown as { $client: PGlite }).$client
  await client.query('checkpoint')
  const tarball = Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer())
  const partial = `${file}.${process.pid}.partial`
  writeFileSync(partial, tarball)
  renameSync(partial, file)
  removeStaleCopies(SAVED[kind].prefix, file)
  // Copies named before the two kinds were (`feedback-test-pglite-<hash>.tar`), alike once a day old.
  removeStaleCopies(/^feedback-test-pglite-[0-9a-f]{16}\.tar$/, file)
  return tarball
}

/** An in-memory PGlite with every migration applied: the migrated copy, loaded. */
async function migratedPglite(): Promise<DbHandle> {
  const file = savedFile('migrated')
  const saved = readSaved(file)
  if (saved) return openDatabase({ loadDataDir: new Blob([saved]) })
  const handle = await openDatabase({})
  await handle.migrate()
  await save('migrated', file, handle)
  return handle
}

let initdbCopy: Promise<Buffer> | undefined

/**
 * The saved new database (no migration applied), read once a process: a copy removed meanwhile
 * (by a checkout of other inputs, a day later) cannot fail a later test of this one.
 */
function initdbTarball(): Promise<Buffer> {
  initdbCopy ??= (async () => {
    const file = savedFile('initdb')
    const saved = readSaved(file)
    if (saved) return saved
    const handle = await openDatabase({})
    try {
      return await save('initdb', file, handle)
    } finally {
      await handle.close()
    }
  })()
  return initdbCopy
}

/**
 * A new in-memory PGlite that no migration has touched, for `openDatabase({ loadDataDir })` or
 * `new PGlite({ loadDataDir })`: what `openDatabase({})` makes, without running initdb again.
 */
export async function newPgliteDataDir(): Promise<Blob> {
  return new Blob([await initdbTarball()])
}

/**
 * A new data directory for a server or CLI that a test starts on the embedded database
 * (DATA_DIR): the saved new database, unpacked. The server still applies every migration and
 * makes the demo project, as on a first start. Removed when the test ends. Only the README's
 * examples (test/docs/readme-examples.test.ts) start on a directory that does not exist yet,
 * where PGlite runs initdb on disk itself.
 */
export async function newDataDir(t: Pick<Test, 'teardown'>): Promise<string> {
  const tarball = await initdbTarball()
  const dir = mkdtempSync(join(tmpdir(), 'feedback-data-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // The names in the tarball are the data directory's, each with a leading '/'; tar strips it,
  // and says so on stderr.
  execFileSync('tar', ['-x', '-C', dir], { input: tarball, stdio: 'pipe' })
  return dir
}

/**
 * The clock of a scheduled changelog entry, moved on: its publication time becomes now, as it
 * would once the time had come, and the entry is otherwise untouched (no status is stored, and
 * updated_at stays). Whether an entry is published is decided by the database's clock, in the
 * statement that reads it (published_at <= now()), and a test cannot move that clock; so the
 * entry is moved to it instead, which leaves every read the same comparison to make, without a
 * test waiting for a deadline that a slow machine could miss. Returns the new published_at.
 */
export async function scheduledTimeArrives(entryId: string): Promise<string> {
  const { db } = await testDatabase()
  const [entry] = await db
    .update(changelog_entries)
    .set({ published_at: sql`date_trunc('milliseconds', now())` })
    .where(and(eq(changelog_entries.id, entryId), gt(changelog_entries.published_at, sql`now()`)))
    .returning({ published_at: changelog_entries.published_at })
  if (!entry) throw new Error(`changelog entry ${entryId} is not scheduled`)
  return entry.published_at!.toISOString()
}

/**
 * A PostgreSQL URL for the tests that need PostgreSQL itself (outages, shutdown under load,
 * statement timeouts; they live in test/reliability/): DATABASE_URL when set, else
 * TEST_POSTGRES_URL, else a local feedback_test database, created on first use so that `npm test`
 * works on a fresh machine with a local PostgreSQL. Fails, never skips, when PostgreSQL is unreachable.
 */
export async function postgresTestUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL
  assertReliabilityTest()
  if (process.env.TEST_POSTGRES_URL) return process.env.TEST_POSTGRES_URL
  const url = 'postgres://postgres@127.0.0.1:5432/feedback_test'
  const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    const [found] = await admin`select 1 from pg_database where datname = 'feedback_test'`
    if (!found) await admin`create database feedback_test`.catch((error: { code?: string }) => {
      // Another test file created it at the same moment.
      if (error.code !== '42P04' && error.code !== '23505') throw error
    })
  } finally {
    await admin.end({ timeout: 5 })
  }
  return url
}

/**
 * The embedded pass of `npm test` (no DATABASE_URL) leaves test/reliability/ out and the
 * PostgreSQL pass runs every file, so a test that needs PostgreSQL itself runs once only from
 * there (.ci/run): asked for anywhere else, it fails here rather than run twice in CI.
 */
function assertReliabilityTest(): void {
  const file = currentTestFile()
  if (file.startsWith('test/') && !file.startsWith('test/reliability/')) {
    throw new Error(`a test of ${file} needs PostgreSQL itself: such a test belongs in test/reliability/, which runs once, in the PostgreSQL pass`)
  }
}

/**
 * The plan PostgreSQL chooses for a query, as text. The test tables are tiny, so sequential and
 * bitmap scans, and sorts, are priced out: on a project of one row, scanning another index and
 * sorting is cheapest and would prove nothing. A Sort that still shows is one no index can avoid.
 */
export async function explainPlan(query: SQLWrapper): Promise<string> {
  const { db } = await testDatabase()
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local enable_seqscan = off`)
    await tx.execute(sql`set local enable_bitmapscan = off`)
    await tx.execute(sql`set local enable_sort = off`)
    const result = await tx.execute(sql`explain ${query}`)
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, string>[]
    return rows.map((row) => Object.values(row)[0]).join('\n')
  })
}

/**
 * Whether a plan sorts more than a page: a Sort node with no Limit beneath it. A deferred join
 * sorts the page's few rows again after the index has chosen them, which costs nothing; a Sort
 * over every matching row is what the list indexes are there to avoid.
 */
export function sortsBeyondAPage(plan: string): boolean {
  const nodes = plan.split('\n').map((line, index) => {
    const arrow = line.indexOf('->')
    const isNode = index === 0 || arrow >= 0
    return { isNode, depth: arrow >= 0 ? arrow : 0, name: line.replace(/^\s*(->\s*)?/, '') }
  }).filter((node) => node.isNode)
  return nodes.some((node, i) => {
    if (!node.name.startsWith('Sort') && !node.name.startsWith('Incremental Sort')) return false
    const below = []
    for (const next of nodes.slice(i + 1)) {
      if (next.depth <= node.depth) break
      below.push(next)
    }
    return !below.some((n) => n.name.startsWith('Limit'))
  })
}

/**
 * A new, empty PostgreSQL database on the server postgresTestUrl() names, dropped when the test
 * ends: for what only an empty database shows (the server's first start), or one made with
 * `createOptions` (CREATE DATABASE's, such as a collation). Fails without PostgreSQL.
 */
export async function freshPostgresDatabase(t: { teardown(fn: () => Promise<void>): void }, createOptions = ''): Promise<string> {
  const base = new URL(await postgresTestUrl())
  const name = `feedback_fresh_${process.pid}_${randomBytes(4).toString('hex')}`
  base.pathname = '/postgres'
  const admin = postgres(base.href, { max: 1, connect_timeout: 5, onnotice: () => {} })
  await admin.unsafe(`create database ${name} ${createOptions}`)
  t.teardown(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end({ timeout: 5 })
  })
  base.pathname = `/${name}`
  return base.href
}

export interface IndexScan {
  /** `Index Scan`, `Index Only Scan`, with ` Backward` when the index is read in reverse. */
  node: string
  index: string
  backward: boolean
  /** The node's `Index Cond:` (what the index itself narrows to), '' when none. */
  cond: string
  /** The node's `Filter:` (rows read from the index, then checked one by one), '' when none. */
  filter: string
}

/**
 * The index scans of a plan with their conditions and filters, so that a test can say which
 * predicate an index serves (a cursor: an Index Cond) and which it only checks row by row (a
 * label: a Filter on the list's index, in its order).
 */
export function indexScans(plan: string): IndexScan[] {
  const lines = plan.split('\n')
  const scans: IndexScan[] = []
  for (const [i, line] of lines.entries()) {
    const match = /(Index (?:Only )?Scan( Backward)?) using (\S+)/.exec(line)
    if (!match) continue
    const scan: IndexScan = { node: match[1]!, index: match[3]!, backward: match[2] !== undefined, cond: '', filter: '' }
    const depth = line.search(/\S/)
    for (const next of lines.slice(i + 1)) {
      if (next.search(/\S/) <= depth || next.includes('->')) break
      const property = /^\s*(Index Cond|Filter): (.*)$/.exec(next)
      if (property?.[1] === 'Index Cond') scan.cond = property[2]!
      if (property?.[1] === 'Filter') scan.filter = property[2]!
    }
    scans.push(scan)
  }
  return scans
}

/**
 * The statements Drizzle runs from now until the test ends, on either driver, as their SQL: it
 * logs each to its NoopLogger, which this replaces for the test. Left out: the last_used_at
 * flushes that the timer of every app in this process runs on its own (http/key-usage.ts), which
 * belong to no request.
 */
export function statementsRun(tt: Test): { list: () => string[]; clear: () => void } {
  const statements: string[] = []
  const logger = NoopLogger.prototype as { logQuery: (query: string) => void }
  const original = logger.logQuery
  logger.logQuery = (query) => void statements.push(query)
  tt.teardown(() => void (logger.logQuery = original))
  const background = /api_key_deferred_uses|last_used_written_at/
  return { list: () => statements.filter((query) => !background.test(query)), clear: () => void (statements.length = 0) }
}
