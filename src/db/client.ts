// One Database type over two drivers: postgres.js when DATABASE_URL is set, the embedded
// PGlite otherwise. Both speak the same SQL, so the repositories do not know which it is.
import { mkdir } from 'node:fs/promises'
import { sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres, { type Sql } from 'postgres'
import { lockDataDir } from './data-dir-lock.js'
import { MarkdownRenderer } from '../portal/markdown-rendering.js'
import { backfillBodyHtml } from './backfill.js'
import { PreparedPGlite } from './pglite-prepared.js'
import { someCause } from './results.js'
import { preparedByDefault } from './prepared.js'
import { migrationsFolder } from '../paths.js'
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
  close(): Promise<void>
}

/**
 * How busy the database pool is. A slot is a place for one statement or transaction: on
 * PostgreSQL one per pooled connection, or PIPELINE_DEPTH per connection while PostgreSQL answers
 * (see ConnectGate); the embedded PGlite is one connection with one slot, running one statement
 * at a time.
 */
export interface PoolStats {
  /** Connections the pool may open (DB_POOL_SIZE; 1 for PGlite). */
  connections: number
  /** Statements or transactions that may run at once now. */
  slots: number
  /** Slots taken. */
  inUse: number
  /** Statements or transactions waiting for a slot. */
  waiting: number
}

/** Serialises migrations of several instances starting at once against one database. */
const MIGRATION_LOCK = 0x46425f4d // "FB_M"

/**
 * Statements in flight per pooled connection while PostgreSQL answers. postgres.js pipelines: it
 * sends a statement on a busy connection without waiting for the one before, so PostgreSQL runs
 * them back to back and their round trips, writes and reads overlap. One at a time, a GET of one
 * entry cost 0.19 ms of server CPU on the benchmark; eight, 0.12 ms, for 60 % more requests a
 * second (npm run bench). The price: a slow statement delays the few queued behind it on its
 * connection, within DB_STATEMENT_TIMEOUT_MS. A transaction holds its connection alone once begun.
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
  /** Who opens an embedded data directory ("the server", "the admin CLI"), named to a second opener. */
  role?: string
  /**
   * In-memory PGlite only: start from this data directory (a `dumpDataDir()` tarball) instead of
   * an empty one, skipping initdb. The tests load one migrated database this way (test/helpers/db.ts).
   */
  loadDataDir?: Blob
}

function describePostgres(url: string): string {
  try {
    const { hostname, port, pathname } = new URL(url)
    return `PostgreSQL at ${hostname}:${port || 5432}${pathname}`
  } catch {
    return 'PostgreSQL'
  }
}

export async function openDatabase(options: DbOptions): Promise<DbHandle> {
  if (options.databaseUrl) {
    const client = postgres(options.databaseUrl, {
      max: options.poolSize ?? 10,
      connect_timeout: options.connectTimeout ?? 5,
      onnotice: () => {},
      connection: { statement_timeout: options.statementTimeoutMs ?? 5000 },
      // The type query postgres.js runs on each new connection drops its error when that
      // connection is killed, crashing the process with an unhandled rejection (porsager/postgres
      // #1192, #1205). Our only array column is text[], which Drizzle parses itself.
      fetch_types: false,
      // The default reconnect delay grows to 20 s and is shared by the pool; retry quickly instead.
      backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 0.5),
    })
    const connections = options.poolSize ?? 10
    const gate = new ConnectGate(connections, PIPELINE_DEPTH, (options.connectTimeout ?? 5) * 1000)
    const db = drizzlePostgres(preparedByDefault(gated(client, gate)), { schema }) as unknown as Database
    return {
      db,
      kind: 'postgres',
      description: describePostgres(options.databaseUrl),
      async migrate() {
        // A session lock needs one connection for the lock and the migration alike.
        const single = postgres(options.databaseUrl!, { max: 1, connect_timeout: options.connectTimeout ?? 5, onnotice: () => {} })
        try {
          await single`select pg_advisory_lock(${MIGRATION_LOCK})`
          const locked = drizzlePostgres(single, { schema })
          await migratePostgres(locked, { migrationsFolder })
          // Still under the lock (it is the session's, released when `single` ends).
          await backfill(locked as unknown as Database)
        } finally {
          await single.end({ timeout: 5 })
        }
      },
      poolStats: () => ({ connections, ...gate.stats() }),
      close: () => client.end({ timeout: 5 }),
    }
  }
  let unlock = () => {}
  if (options.dataDir) {
    await mkdir(options.dataDir, { recursive: true })
    unlock = lockDataDir(options.dataDir, options.role ?? `process ${process.argv.slice(1).join(' ')}`)
  }
  // PGlite runs PostgreSQL's default 128 MB of shared buffers inside this process; its data
  // files already sit in the OS page cache, so 32 MB costs nothing measurable and keeps the
  // server about 90 MB smaller (measured on a reopened data directory: 282 → 199 MB).
  const client = new PreparedPGlite({ dataDir: options.dataDir, loadDataDir: options.loadDataDir, postgresqlconf: ['shared_buffers=32MB'] })
  const db = drizzlePglite(client, { schema }) as unknown as Database
  return {
    db,
    kind: 'pglite',
    description: options.dataDir ? `the embedded database in ${options.dataDir}` : 'an in-memory embedded database',
    async migrate() {
      await migratePglite(drizzlePglite(client, { schema }), { migrationsFolder })
      await backfill(db)
    },
    poolStats: () => ({ connections: 1, slots: 1, inUse: Math.min(client.pending, 1), waiting: Math.max(client.pending - 1, 0) }),
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

/** Connection failures that mean "PostgreSQL cannot be reached", not "this connection broke". */
const CANNOT_CONNECT = new Set(['CONNECT_TIMEOUT', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P03'])
const cannotConnect = (error: unknown): boolean => someCause(error, (e) => CANNOT_CONNECT.has(e.code as string))
/** How long new work fails at once after PostgreSQL could not be reached, before one request probes it. */
const COOL_DOWN_MS = 1000

/**
 * Fails fast while PostgreSQL cannot be reached. postgres.js queues the queries beyond its pool
 * and gives each queued one a connect attempt of its own once an earlier attempt fails, so behind
 * a server that accepts TCP and never answers, the n-th queued request waits about n / pool
 * connect timeouts. The gate keeps that queue itself, with one slot per pooled connection until
 * PostgreSQL answers (so that no statement queues behind a connection attempt), then
 * `pipelineDepth` slots per connection, and:
 * - when an attempt to connect fails (refused, timed out), fails every waiting request and, for
 *   COOL_DOWN_MS, every new one at once, and goes back to one slot per connection;
 * - then lets one request through as a probe (another after each connect timeout, so a probe
 *   that hangs cannot keep it shut); any answer from PostgreSQL, even an error, closes it again;
 * - never lets a request wait for a slot longer than the connect timeout.
 * Refusals carry SQLSTATE 08001, which the error handler answers with 503 unavailable. This is
 * only this process's view of the database; instances share nothing.
 */
export class ConnectGate {
  private running = 0
  private readonly waiting: { go: () => void; fail: (error: Error) => void }[] = []
  /** Set while PostgreSQL could not be reached: until then, new work is refused at once. */
  private retryAt: number | undefined
  /** Whether PostgreSQL has answered since it last could not be reached. */
  private answering = false

  constructor(
    private readonly connections: number,
    private readonly pipelineDepth: number,
    private readonly connectTimeoutMs: number,
  ) {}

  private get slots(): number {
    return this.answering ? this.connections * this.pipelineDepth : this.connections
  }

  /** Slots now, taken and waited for (PoolStats, for the metrics). */
  stats(): { slots: number; inUse: number; waiting: number } {
    return { slots: this.slots, inUse: this.running, waiting: this.waiting.length }
  }

  async run<T>(work: () => PromiseLike<T>): Promise<T> {
    if (this.retryAt !== undefined) {
      if (Date.now() < this.retryAt) throw unreachable('PostgreSQL could not be reached a moment ago')
      this.retryAt = Date.now() + this.connectTimeoutMs // this request is the probe
    }
    await this.acquire()
    try {
      const result = await work()
      this.answered()
      return result
    } catch (error) {
      if (cannotConnect(error)) this.trip()
      else this.answered() // if only with an error
      throw error
    } finally {
      this.release()
    }
  }

  private answered() {
    this.retryAt = undefined
    this.answering = true
  }

  private acquire(): Promise<void> {
    if (this.running < this.slots) {
      this.running++
      return Promise.resolve()
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        go: () => (clearTimeout(timer), resolve()),
        fail: (error: Error) => (clearTimeout(timer), reject(error)),
      }
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1)
        reject(unreachable('no database connection became free within the connect timeout'))
      }, this.connectTimeoutMs)
      this.waiting.push(waiter)
    })
  }

  /** Hands the slot to the next waiter, if any; as many as the slots allow once PostgreSQL answers. */
  private release() {
    this.running--
    while (this.waiting.length > 0 && this.running < this.slots) {
      this.running++
      this.waiting.shift()!.go()
    }
  }

  private trip() {
    this.retryAt = Date.now() + COOL_DOWN_MS
    this.answering = false
    for (const waiter of this.waiting.splice(0)) waiter.fail(unreachable('PostgreSQL could not be reached'))
  }
}

const unreachable = (message: string) => Object.assign(new Error(message), { code: '08001' })

/**
 * The postgres.js client with the two calls Drizzle makes on the pool, `unsafe` (every query
 * outside a transaction) and `begin` (a transaction, which holds one connection throughout),
 * run through the gate. Queries inside a transaction use the transaction's own client. Drizzle
 * chains `.values()` on what `unsafe` returns before awaiting it, so that stays lazy.
 */
function gated(client: Sql, gate: ConnectGate): Sql {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'begin') return (...args: unknown[]) => gate.run(() => (target.begin as (...a: unknown[]) => PromiseLike<unknown>)(...args))
      if (property !== 'unsafe') return Reflect.get(target, property, receiver)
      return (...args: Parameters<Sql['unsafe']>) => {
        let values = false
        let started: Promise<unknown> | undefined
        const query = {
          values() {
            values = true
            return query
          },
          then<A, B>(resolve?: (value: unknown) => A | PromiseLike<A>, reject?: (reason: unknown) => B | PromiseLike<B>) {
            started ??= gate.run(() => (values ? target.unsafe(...args).values() : target.unsafe(...args)))
            return started.then(resolve, reject)
          },
        }
        return query
      }
    },
  })
}

/** A cheap round trip, for /readyz. */
export async function ping(db: Database): Promise<void> {
  await db.execute(sql`select 1`)
}
