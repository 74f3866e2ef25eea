// One Database type over two drivers: postgres.js when DATABASE_URL is set, the embedded
// PGlite otherwise. Both speak the same SQL, so the repositories do not know which it is.
import { mkdir, readdir } from 'node:fs/promises'
import { sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres, { type Sql } from 'postgres'
import { LOCK_FILE, lockDataDir } from './data-dir-lock.js'
import { runningAgainOnDeadlock, withMigrationLock } from './migration-lock.js'
import { connectionTarget } from './target.js'
import { MarkdownRenderer } from '../portal/markdown-rendering.js'
import { backfillBodyHtml } from './backfill.js'
import { assertPatchedDriver } from './driver-check.js'
import { PreparedPGlite } from './pglite-prepared.js'
import { ConnectGate, connectionError, systemClock, type Availability, type Clock, type TlsMode } from './gate.js'
import { preparedByDefault } from './prepared.js'
import { migrationsFolder } from '../paths.js'
import { defaults, SetupError, statementDeadlineFor, type Config } from '../config.js'
import { databaseStartProblem } from './start-problem.js'
import { parseTextArray, TEXT_ARRAY_OID, textArrayLiteral } from './text-array.js'
import * as schema from './schema.js'

export type Schema = typeof schema
export type Database = PgDatabase<PgQueryResultHKT, Schema>

export interface DbHandle {
  readonly db: Database
  readonly kind: 'pglite' | 'postgres'
  /** Which database this is, for a person (no password): "PostgreSQL at host:5432/name", "the embedded database in ./data". */
  readonly description: string
  /** Applies the migrations in drizzle/ that have not run yet, then renders the bodies that have no HTML (backfill.ts). */
  migrate(): Promise<void>
  /** The pool as it is at this moment, for the metrics: read-only, costs nothing. */
  poolStats(): PoolStats
  /** A round trip for /readyz, bounded in time on PostgreSQL. */
  ping(): Promise<void>
  /** Calls `listener` when PostgreSQL becomes unreachable and reachable again (PostgreSQL only; the embedded database never goes away). */
  onAvailability(listener: (event: Availability) => void): () => void
  /** Connections destroyed because they missed the statement deadline (PostgreSQL), for the metrics. */
  deadlineMisses(): number
  /**
   * PostgreSQL's statement_timeout on the pool's connections, in milliseconds (0: none); undefined
   * on the embedded database. Behind PgBouncer the one asked for at connect may not reach it.
   */
  statementTimeoutMs(): Promise<number | undefined>
  /**
   * Ends the pool: statements under way may finish for `graceMs` (5 s unless told), then every
   * connection is destroyed, and what still runs or waits for a connection fails as the
   * database's absence does (a 503). The embedded database closes at once.
   */
  close(graceMs?: number): Promise<void>
}

/**
 * How busy the database pool is. A slot is a place for one statement or transaction: on
 * PostgreSQL PIPELINE_DEPTH per pooled connection (one with DB_PREPARE=false); the embedded PGlite is one connection with
 * one slot, running one statement at a time.
 */
export interface PoolStats {
  /** Connections the pool may open (DB_POOL_SIZE; 1 for PGlite). */
  connections: number
  /** Statements or transactions that may run at once. */
  slots: number
  /** Connections running a statement or holding a transaction (PGlite: 1 while busy). */
  inUse: number
  /** Statements waiting: on PostgreSQL, sent behind another on its connection; on PGlite, for its one connection. */
  waiting: number
}

/** Seconds a database connection is idle before TCP keep-alive probes start. */
const KEEP_ALIVE_S = 10

/**
 * Statements in flight per pooled connection (postgres.js's max_pipeline). postgres.js pipelines: it
 * sends a statement on a busy connection without waiting for the one before, so PostgreSQL runs
 * them back to back and their round trips, writes and reads overlap. One at a time, a GET of one
 * entry cost 0.19 ms of server CPU on the benchmark; eight, 0.12 ms, for 60 % more requests a
 * second (npm run bench). The price: a slow statement delays the few queued behind it on its
 * connection, within DB_STATEMENT_TIMEOUT_MS. A transaction holds its connection alone once begun.
 * postgres.js sends nothing on a connection that is still connecting: statements wait for it.
 *
 * Not with DB_PREPARE=false (PgBouncer in transaction mode): one statement at a time. Unnamed, a
 * statement with parameters goes out in two steps, Parse, Describe and Flush first (the driver
 * learns the parameters' types), then Bind, Execute and Sync; pipelined behind another
 * statement's Sync, the first step reached the server connection that PgBouncer 1.18 hands back
 * at that statement's ReadyForQuery, and PgBouncer dropped its answer and closed the server
 * connection ("got packet from server when not linked"). The statement then waited for ever, the
 * gate counting its connection idle (test/reliability/pgbouncer.test.ts).
 */
const PIPELINE_DEPTH = 8

export interface DbOptions {
  databaseUrl?: string
  /** PGlite data directory; in memory when undefined. */
  dataDir?: string
  poolSize?: number
  connectTimeout?: number
  /** PostgreSQL only: cancels any statement running longer, so no request holds the database. */
  statementTimeoutMs?: number
  /**
   * PostgreSQL only: a connection that owes an answer and receives nothing for this long is
   * destroyed and its statements answered 503 (a network that stopped carrying bytes). More than
   * statementTimeoutMs; by default statementTimeoutMs + 1000.
   */
  statementDeadlineMs?: number
  /** PostgreSQL only: how long /readyz waits for `select 1` before answering 503; 2000 by default. */
  readyDeadlineMs?: number
  /** The connect gate's clock (tests). */
  clock?: Clock
  /** Who opens an embedded data directory ("the server", "the admin CLI"), named to a second opener. */
  role?: string
  /** PostgreSQL only: false runs every statement unnamed (DB_PREPARE), for PgBouncer in transaction mode. */
  prepare?: boolean
  /**
   * In-memory PGlite only: start from this data directory (a `dumpDataDir()` tarball) instead of
   * an empty one, skipping initdb. The tests load their saved databases, new and migrated, this
   * way (test/helpers/db.ts).
   */
  loadDataDir?: Blob
}

/** Which database `options` name, for a person (no password). */
function describeDatabase(options: Pick<DbOptions, 'databaseUrl' | 'dataDir'>): string {
  if (options.databaseUrl) return connectionTarget(options.databaseUrl).description
  return options.dataDir ? `the embedded database in ${options.dataDir}` : 'an in-memory embedded database'
}

/**
 * The database the configuration names (DATABASE_URL, or the embedded one in DATA_DIR, with the
 * DB_* settings), opened by `role` and migrated: how the server, the admin CLI and
 * `npm run db:migrate` open it. A database that refuses them (unreachable, no such database,
 * a wrong password) is a SetupError saying so in one line.
 */
export async function openConfiguredDatabase(config: Config, role: string): Promise<DbHandle> {
  const options: DbOptions = {
    databaseUrl: config.databaseUrl,
    dataDir: config.databaseUrl ? undefined : config.dataDir,
    poolSize: config.dbPoolSize,
    connectTimeout: config.dbConnectTimeout,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    statementDeadlineMs: config.dbStatementDeadlineMs,
    prepare: config.dbPrepare,
    role,
  }
  let database: DbHandle | undefined
  try {
    database = await openDatabase(options)
    await database.migrate()
    // One statement on the pool, whose connections send what the migration's did not
    // (statement_timeout, TimeZone): a PgBouncer that refuses one refuses every request after.
    await database.statementTimeoutMs()
    return database
  } catch (error) {
    await database?.close().catch(() => undefined)
    const problem = databaseStartProblem(error, describeDatabase(options))
    throw problem ? new SetupError(problem) : error
  }
}

/**
 * A DATA_DIR that holds files but no database (`DATA_DIR=.`, a typo): PGlite would write
 * PostgreSQL's files among them (found by a newcomer's review), where initdb refuses a directory
 * that is not empty. The lock's own files (a start that stopped before it made the database) are
 * no one else's, and a file system's `lost+found` (a volume mounted as DATA_DIR) is no one's.
 */
async function refuseForeignFiles(dataDir: string): Promise<void> {
  const entries = (await readdir(dataDir)).filter((name) => !name.startsWith(LOCK_FILE) && name !== 'lost+found')
  if (entries.length && !entries.includes('PG_VERSION')) {
    throw new SetupError(`DATA_DIR ${dataDir} holds other files (${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', …' : ''}) and no embedded database: give it a new or empty directory.`)
  }
}

export async function openDatabase(options: DbOptions): Promise<DbHandle> {
  if (options.databaseUrl) {
    assertPatchedDriver()
    const statementTimeoutMs = options.statementTimeoutMs ?? defaults.dbStatementTimeoutMs
    const clock = options.clock ?? systemClock
    const connectTimeout = options.connectTimeout ?? defaults.dbConnectTimeout
    const gate = new ConnectGate({
      statementDeadlineMs: options.statementDeadlineMs ?? statementDeadlineFor(statementTimeoutMs),
      connectTimeoutMs: connectTimeout * 1000,
      tls: tlsMode(options.databaseUrl),
      keepAliveMs: KEEP_ALIVE_S * 1000,
      clock,
    })
    const prepare = options.prepare ?? defaults.dbPrepare
    const target = connectionTarget(options.databaseUrl)
    const pipelineDepth = prepare ? PIPELINE_DEPTH : 1
    const connections = options.poolSize ?? defaults.dbPoolSize
    const connectionOptions = {
      // Off (0): the gate ends a startup that takes longer than connectTimeout, on its clock,
      // which a test can run by hand; a second, real timer would race it.
      connect_timeout: 0,
      onnotice: () => {},
      // TimeZone: timestamps come back in UTC whatever the database's own zone. In another, a
      // date before standard time is written with its local mean time (+00:19:32), which no
      // JavaScript Date parses: a year-1000 date answered 500 (found by a review).
      connection: { statement_timeout: statementTimeoutMs, TimeZone: 'UTC' },
      // Arrays, as postgres.js's README gives them ("ip address[es]"), though its types say one.
      ...(target.options as object),
      // The gate negotiates TLS (tlsMode), so that it reads the protocol after decryption.
      ssl: false,
      // The type query postgres.js runs on each new connection drops its error when that
      // connection is killed, crashing the process with an unhandled rejection (porsager/postgres
      // #1192, #1205). Our only array columns are text[], which text-array.ts reads.
      fetch_types: false,
      types: { textArray: { to: TEXT_ARRAY_OID, from: [TEXT_ARRAY_OID], serialize: textArrayLiteral, parse: parseTextArray } },
      // Every connection is opened by the gate (gate.ts), which fails fast while PostgreSQL cannot
      // be reached and paces the attempts; the driver's own delay would only add to it.
      backoff: () => 0,
      keep_alive: KEEP_ALIVE_S,
    }
    const client = postgres(target.url, {
      ...connectionOptions,
      max: connections,
      prepare,
      // Neither is in the driver's types: `socket` is in its README ("Custom socket"); max_pipeline
      // is parsed with the other options (src/index.js) and counts the statements behind the one
      // running, so pipelineDepth are in flight in all.
      ...({ socket: gate.socket, max_pipeline: pipelineDepth - 1 } as object),
    })
    // /readyz asks on a connection of its own. On the pool, its select 1 queued behind statements
    // waiting on a lock (a few writes on one locked row fill the pool) and missed its deadline:
    // the instance declared PostgreSQL unreachable, and every instance's /readyz failed at once
    // (found by a review injecting faults). Opened by the gate too, so a readiness check that
    // cannot connect, or gets no answer, is still an outage.
    const readiness = postgres(target.url, { ...connectionOptions, max: 1, prepare: false, ...({ socket: gate.unpooledSocket } as object) })
    const db = drizzlePostgres(preparedByDefault(client), { schema }) as unknown as Database
    const readinessDb = drizzlePostgres(readiness, { schema }) as unknown as Database
    const readyDeadlineMs = options.readyDeadlineMs ?? 2000
    return {
      db,
      kind: 'postgres',
      description: describeDatabase(options),
      async migrate() {
        const lockOptions = { connectTimeout, prepare }
        await withMigrationLock(target, lockOptions, async (single) => {
          const locked = drizzlePostgres(single, { schema })
          await runningAgainOnDeadlock(() => migratePostgres(locked, { migrationsFolder }))
          await backfill(locked as unknown as Database)
        })
      },
      poolStats: () => ({ connections, slots: connections * pipelineDepth, ...gate.stats() }),
      ping: () => pingWithin(readinessDb, gate, readyDeadlineMs, clock),
      onAvailability: (listener) => gate.onAvailability(listener),
      deadlineMisses: () => gate.deadlineMisses,
      async statementTimeoutMs() {
        // In milliseconds whatever the unit it was set in ('5s', '5000').
        const [row] = await client<{ ms: number }[]>`select extract(epoch from current_setting('statement_timeout')::interval) * 1000 as ms`
        return Number(row!.ms)
      },
      async close(graceMs = 5_000) {
        const timeout = Math.max(0, graceMs) / 1000
        await Promise.all([client.end({ timeout }), readiness.end({ timeout })])
      },
    }
  }
  let unlock = () => {}
  if (options.dataDir) {
    await mkdir(options.dataDir, { recursive: true }).catch((error: NodeJS.ErrnoException) => {
      // A file in its place, a parent that is a file, no permission, a loop of links: one line,
      // not a stack (an operations review).
      throw new SetupError(`DATA_DIR ${options.dataDir} cannot hold the embedded database (${error.code ?? error.message}: not a directory, or not one this process may create): fix it.`)
    })
    const dataDir = options.dataDir
    await refuseForeignFiles(dataDir)
    unlock = lockDataDir(dataDir, options.role ?? `process ${process.argv.slice(1).join(' ')}`, {
      // Another process has the lock now, and may have opened the database: two writers corrupt
      // it, so this one stops at once, without another write.
      onLost: () => {
        process.stderr.write(`The lock on the embedded database in ${dataDir} was taken by another process while this one held it (paused for longer than its heartbeat allows?): stopping, so that the database never has two writers.\n`)
        process.exit(1)
      },
    })
  }
  // PGlite runs PostgreSQL's default 128 MB of shared buffers inside this process; its data
  // files already sit in the OS page cache, so 32 MB costs nothing measurable and keeps the
  // server about 90 MB smaller (measured on a reopened data directory: 282 → 199 MB).
  const client = new PreparedPGlite(options.dataDir, { loadDataDir: options.loadDataDir, postgresqlconf: ['shared_buffers=32MB'] })
  const db = drizzlePglite(client, { schema }) as unknown as Database
  return {
    db,
    kind: 'pglite',
    description: describeDatabase(options),
    async migrate() {
      await migratePglite(drizzlePglite(client, { schema }), { migrationsFolder })
      await backfill(db)
    },
    poolStats: () => ({ connections: 1, slots: 1, inUse: Math.min(client.pending, 1), waiting: Math.max(client.pending - 1, 0) }),
    ping: () => ping(db),
    onAvailability: () => () => {},
    deadlineMisses: () => 0,
    statementTimeoutMs: async () => undefined,
    close: async () => {
      try {
        await client.close()
      } finally {
        unlock()
      }
    },
  }
}

/** The Markdown of rows that have no HTML yet, rendered as writes render it; a worker starts only if one needs it. */
async function backfill(db: Database): Promise<void> {
  const renderer = new MarkdownRenderer()
  try {
    await backfillBodyHtml(db, (source) => renderer.render(source))
  } finally {
    await renderer.close()
  }
}

/**
 * The TLS DATABASE_URL asks for, read as postgres.js reads it: `sslmode` (or `ssl`), and
 * `sslrootcert=system` for verify-full; `disable` or `false` for none.
 */
function tlsMode(databaseUrl: string): TlsMode | undefined {
  const query = new URL(databaseUrl).searchParams
  const mode = query.get('sslrootcert') === 'system' ? 'verify-full' : (query.get('sslmode') ?? query.get('ssl'))
  return !mode || mode === 'disable' || mode === 'false' ? undefined : { mode }
}

/**
 * Warns when PostgreSQL runs the pool's statements without a statement_timeout: behind PgBouncer
 * the one asked for at connect may not reach it (README, "Behind PgBouncer"), and without one a
 * statement waiting on a lock reads as an outage. Run by the server once it listens.
 */
export async function warnWithoutStatementTimeout(database: DbHandle, log: { warn(message: string): void }): Promise<void> {
  if ((await database.statementTimeoutMs()) !== 0) return
  log.warn(
    'PostgreSQL runs statements without a statement_timeout: DB_STATEMENT_TIMEOUT_MS did not reach it (behind PgBouncer, set it on the role: ALTER ROLE ... SET statement_timeout)',
  )
}

/** A cheap round trip, for /readyz. */
export async function ping(db: Database): Promise<void> {
  await db.execute(sql`select 1`)
}

/**
 * `ping` that gives up after `deadlineMs` (the statement is left to the gate's deadline), telling
 * the gate: a database that does not answer `select 1` in that time is out for this instance.
 */
async function pingWithin(db: Database, gate: ConnectGate, deadlineMs: number, clock: Clock): Promise<void> {
  let timer: unknown
  const missed = new Promise<never>((_, reject) => {
    timer = clock.setTimeout(() => {
      gate.failed(`no answer to a readiness check within ${deadlineMs} ms`)
      reject(connectionError('08006', `PostgreSQL did not answer a readiness check within ${deadlineMs} ms`))
    }, deadlineMs)
  })
  try {
    await Promise.race([ping(db), missed])
  } finally {
    clock.clearTimeout(timer)
  }
}
