// PGlite's query() makes six calls into PostgreSQL for every statement (Parse, Describe, Bind,
// Describe, Execute, Sync), and PostgreSQL parses and plans the statement again each time. This
// client parses each statement once, under a name, and runs it afterwards with one call of Bind,
// Execute and Sync, as db/prepared.ts has postgres.js do. Measured with
// scripts/bench/pglite-statements.ts (the app on 10 000 rows, CPU ms a request, PGlite's own
// query() → this client, runs interleaved on a loaded machine): GET by id 0.82–1.12 → 0.27,
// enrollment 1.42–2.14 → 0.56, first page 1.79–2.47 → 1.45–1.69. PGlite is the default
// database, so the client stays.
//
// Only PGlite's public API: execProtocolStream() with the protocol's serializers, runExclusive()
// (its statement lock), its parsers and serializers, and parseResults() for the result's shape.
// It also leans on how PGlite behaves around that API (its start-up query goes through query()
// before `ready`; a statement outside a transaction takes only runExclusive), so package.json
// pins PGlite's exact version: an upgrade is a deliberate step, run through
// test/db/pglite-prepared.test.ts.
// What it adds: a lock of its own for transactions (PGlite keeps its one private), the named
// statements (a bounded cache, least recently used closed first), and what to do when one
// stops working (re-parse it; inside a transaction, fail that transaction alone).
import { Mutex, parse, PGlite, protocol, type PGliteOptions, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite'

const { serialize } = protocol

type Message = Awaited<ReturnType<PGlite['execProtocolStream']>>[number]

interface Statement {
  name: string
  /** The parameter types PostgreSQL inferred, to serialize values as PGlite does. */
  paramTypes: number[]
  /** The statement's RowDescription, which a run by name does not send again; none when it returns no rows. */
  description: Message | undefined
}

/** Named statements kept at most, the least recently used closed first. */
export const MAX_STATEMENTS = 500

const concat = (parts: Uint8Array[]): Uint8Array => Buffer.concat(parts)
/**
 * The cached statement no longer runs: 0A000 "cached plan must not change result type" (a table
 * it reads changed shape), 26000 "prepared statement does not exist" (something closed it).
 */
const isStatementGone = (error: unknown) => ['0A000', '26000'].includes((error as { code?: string }).code ?? '')

export class PreparedPGlite extends PGlite {
  /** By SQL text, in the order of last use (a hit moves its entry to the end). */
  readonly #statements = new Map<string, Statement>()
  /** Names evicted or stale, closed with the next Parse (closing one that is gone is no error). */
  readonly #toClose: string[] = []
  /**
   * One transaction, or one statement outside any, at a time. PGlite takes a lock of its own for
   * this that it keeps private; every way in that begins a transaction here (transaction())
   * takes this one, so a statement outside a transaction never runs inside another's.
   */
  readonly #outside = new Mutex()
  readonly #maxStatements: number
  #named = 0
  #pending = 0

  constructor(dataDir?: string, options?: PGliteOptions, { maxStatements = MAX_STATEMENTS }: { maxStatements?: number } = {}) {
    // PGlite reads its options from the first argument unless that is a data directory.
    super({ ...options, ...(dataDir === undefined ? {} : { dataDir }) })
    this.#maxStatements = maxStatements
  }

  /** Statements and transactions running or waiting for PGlite's one connection (the pool's view, for the metrics). */
  get pending(): number {
    return this.#pending
  }

  /** Named statements held now (at most MAX_STATEMENTS). */
  get preparedStatements(): number {
    return this.#statements.size
  }

  /**
   * Waits until PGlite is ready. PGlite runs a query of its own before it is (its `ready` is true
   * by then), through this class's query(): a statement or transaction that took #outside
   * before that would wait for it forever, so none takes #outside before this.
   */
  async #ready(): Promise<void> {
    if (this.ready) return
    if (this.closed) throw new Error('PGlite is closed')
    await this.waitReady
  }

  override async query<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
    this.#pending++
    try {
      if (options?.blob || options?.paramTypes) return await super.query<T>(text, params, options)
      await this.#ready()
      return await this.#outside.runExclusive(() => this.#run<T>(text, params, options, false))
    } finally {
      this.#pending--
    }
  }

  override async transaction<T>(callback: (tx: Transaction) => Promise<T>): Promise<T> {
    this.#pending++
    try {
      await this.#ready()
      return await this.#outside.runExclusive(() =>
        super.transaction((tx) => {
          const query = <R>(text: string, params?: unknown[], options?: QueryOptions) =>
            options?.blob || options?.paramTypes ? tx.query<R>(text, params, options) : this.#run<R>(text, params ?? [], options, true)
          return callback(Object.assign(Object.create(tx) as Transaction, { query }))
        }),
      )
    } finally {
      this.#pending--
    }
  }

  #run<T>(text: string, params: unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Results<T>> {
    return this.runExclusive(async () => {
      let statement = this.#cached(text) ?? (await this.#prepare(text))
      let messages: Message[]
      try {
        messages = await this.#execute(statement, params, options, inTransaction)
      } catch (error) {
        if (!isStatementGone(error)) throw error
        // Forgotten either way, so that the next call parses the statement again; when one is
        // missing (DEALLOCATE ALL, DISCARD ALL), so are the others, most likely.
        if ((error as { code?: string }).code === '26000') for (const [other, gone] of this.#statements) this.#forget(other, gone)
        else this.#forget(text, statement)
        // Inside a transaction the error has aborted it: nothing more runs there, so the
        // transaction fails with this error and its caller may retry it whole.
        if (inTransaction) throw error
        statement = await this.#prepare(text)
        messages = await this.#execute(statement, params, options, inTransaction)
      }
      return this.#results<T>(statement, messages, options)
    })
  }

  /**
   * PGlite's own parseResults(), given the RowDescription the run by name did not send. It
   * copies PGlite's whole parser table (318 types) for every statement that brings parsers of
   * its own, as every one of Drizzle's does; handed a table that inherits PGlite's instead, and
   * no parsers of the statement's own, it reads the same parsers without the copy.
   */
  #results<T>(statement: Statement, messages: Message[], options: QueryOptions | undefined): Results<T> {
    const all = statement.description ? [statement.description, ...messages] : messages
    if (!options?.parsers) return parse.parseResults(all, this.parsers, options)[0] as Results<T>
    const { parsers, ...rest } = options
    return parse.parseResults(all, Object.assign(Object.create(this.parsers) as PGlite['parsers'], parsers), rest)[0] as Results<T>
  }

  #cached(text: string): Statement | undefined {
    const statement = this.#statements.get(text)
    if (statement) {
      this.#statements.delete(text)
      this.#statements.set(text, statement)
    }
    return statement
  }

  #forget(text: string, statement: Statement) {
    if (this.#statements.get(text) === statement) this.#statements.delete(text)
    this.#toClose.push(statement.name)
  }

  async #prepare(text: string): Promise<Statement> {
    const name = `pglite_${++this.#named}`
    if (this.#statements.size >= this.#maxStatements) {
      const [oldest, evicted] = this.#statements.entries().next().value!
      this.#forget(oldest, evicted)
    }
    const closing = this.#toClose.splice(0)
    let messages: Message[]
    try {
      const close = closing.map((old) => serialize.close({ type: 'S', name: old }))
      messages = await this.execProtocolStream(concat([...close, serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]), {
        syncToFs: false,
      })
    } catch (error) {
      this.#toClose.push(...closing)
      throw error
    }
    const params = messages.find((m) => m.name === 'parameterDescription') as unknown as { dataTypeIDs: number[] } | undefined
    const statement: Statement = { name, paramTypes: params?.dataTypeIDs ?? [], description: messages.find((m) => m.name === 'rowDescription') }
    this.#statements.set(text, statement)
    return statement
  }

  #execute(statement: Statement, params: unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Message[]> {
    const values = params.map((param, i) => {
      if (param === null || param === undefined) return null
      const type = statement.paramTypes[i]!
      const serializer = options?.serializers?.[type] ?? this.serializers[type]
      return serializer ? serializer(param) : String(param)
    })
    const message = concat([serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync()])
    // As PGlite's own query(): outside a transaction, what the statement wrote reaches the file system.
    return this.execProtocolStream(message, { syncToFs: !inTransaction })
  }
}
