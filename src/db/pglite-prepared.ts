// PGlite's query() makes six calls into PostgreSQL for every statement (Parse, Describe, Bind,
// Describe, Execute, Sync), and PostgreSQL parses and plans the statement again each time: on the
// benchmark's data a GET by id took 0.35 to 0.55 ms in PGlite alone. This client parses each
// statement once, under a name, and runs it afterwards with a single call of Bind, Execute and
// Sync: 0.07 ms. It is what db/prepared.ts does for postgres.js. Our SQL takes every value as a
// parameter, so the set of distinct statements is small and fixed.
//
// Everything else is PGlite's own: its locks (one statement at a time, none beside a
// transaction), its value serializers and parsers, its result shape and its errors.
import { PGlite, protocol, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite'

const { serialize } = protocol

type Message = Awaited<ReturnType<PGlite['execProtocolStream']>>[number]

interface Statement {
  name: string
  /** The parameter types PostgreSQL inferred, to serialize values as PGlite does. */
  paramTypes: number[]
  /** The result's columns; none for a statement that returns no rows. */
  fields: { name: string; dataTypeID: number }[]
}

const concat = (parts: Uint8Array[]): Uint8Array => Buffer.concat(parts)
/** SQLSTATE 0A000 "cached plan must not change result type": the table changed under the statement. */
const isStalePlan = (error: unknown) => (error as { code?: string }).code === '0A000'

export class PreparedPGlite extends PGlite {
  readonly #statements = new Map<string, Statement>()
  #named = 0
  #pending = 0

  /** Statements and transactions running or waiting for PGlite's one connection (the pool's view, for the metrics). */
  get pending(): number {
    return this.#pending
  }

  override async query<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
    this.#pending++
    try {
      if (options?.blob || options?.paramTypes) return await super.query<T>(text, params, options)
      await this._checkReady()
      const results = await this._runExclusiveTransaction(() => this.#run<T>(text, params, options))
      // As PGlite's own query: outside a transaction, what the statement wrote reaches the file system.
      await this.syncToFs()
      return results
    } finally {
      this.#pending--
    }
  }

  override async transaction<T>(callback: (tx: Transaction) => Promise<T>): Promise<T> {
    this.#pending++
    try {
      return await super.transaction((tx) => {
        // The transaction already holds PGlite's lock: its statements take only the statement lock.
        const query = <R>(text: string, params?: unknown[], options?: QueryOptions) =>
          options?.blob || options?.paramTypes ? tx.query<R>(text, params, options) : this.#run<R>(text, params ?? [], options)
        return callback(Object.assign(Object.create(tx) as Transaction, { query }))
      })
    } finally {
      this.#pending--
    }
  }

  #run<T>(text: string, params: unknown[], options: QueryOptions | undefined): Promise<Results<T>> {
    return this._runExclusiveQuery(async () => {
      let statement = this.#statements.get(text) ?? (await this.#prepare(text))
      let messages: Message[]
      try {
        messages = await this.#execute(statement, params, options)
      } catch (error) {
        if (!isStalePlan(error)) throw error
        await this.execProtocolStream(concat([serialize.close({ type: 'S', name: statement.name }), serialize.sync()]), { syncToFs: false })
        statement = await this.#prepare(text)
        messages = await this.#execute(statement, params, options)
      }
      return this.#results<T>(statement, messages, options)
    })
  }

  /**
   * PGlite's result shape, as its parseResults() builds it for one statement. Its parsers are
   * chosen once a column here; parseResults() copies the whole parser table (every type and its
   * array type) for every statement that brings parsers of its own, as Drizzle's all do.
   */
  #results<T>(statement: Statement, messages: Message[], options: QueryOptions | undefined): Results<T> {
    const { fields } = statement
    const parsers = fields.map(({ dataTypeID }) => options?.parsers?.[dataTypeID] ?? this.parsers[dataTypeID])
    const value = (text: string | null, i: number) => (text === null ? null : parsers[i] ? parsers[i]!(text, fields[i]!.dataTypeID) : text)
    const rows: unknown[] = []
    let command: string | undefined
    let rowCount = NaN
    for (const message of messages) {
      if (message.name === 'dataRow') {
        const texts = (message as unknown as { fields: (string | null)[] }).fields
        rows.push(options?.rowMode === 'array' ? texts.map(value) : Object.fromEntries(texts.map((text, i) => [fields[i]!.name, value(text, i)])))
      } else if (message.name === 'commandComplete') {
        // A tag that carries a row count ends in it ("SELECT 2", "UPDATE 3", "INSERT 0 5").
        const words = (message as unknown as { text: string }).text.split(' ')
        command = words[0]
        rowCount = parseInt(words.at(-1)!, 10)
      }
    }
    const affectedRows = command && ['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE'].includes(command) ? rowCount : 0
    return { rows, fields, affectedRows, ...(command ? { command } : {}), ...(Number.isNaN(rowCount) ? {} : { rowCount }) } as Results<T>
  }

  async #prepare(text: string): Promise<Statement> {
    const name = `pglite_${++this.#named}`
    const messages = await this.execProtocolStream(concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]), {
      syncToFs: false,
    })
    const params = messages.find((m) => m.name === 'parameterDescription') as unknown as { dataTypeIDs: number[] } | undefined
    const row = messages.find((m) => m.name === 'rowDescription') as unknown as { fields: { name: string; dataTypeID: number }[] } | undefined
    const statement: Statement = {
      name,
      paramTypes: params?.dataTypeIDs ?? [],
      fields: row?.fields.map(({ name, dataTypeID }) => ({ name, dataTypeID })) ?? [],
    }
    this.#statements.set(text, statement)
    return statement
  }

  #execute(statement: Statement, params: unknown[], options: QueryOptions | undefined): Promise<Message[]> {
    const values = params.map((param, i) => {
      if (param === null || param === undefined) return null
      const type = statement.paramTypes[i]!
      const serializer = options?.serializers?.[type] ?? this.serializers[type]
      return serializer ? serializer(param) : String(param)
    })
    const message = concat([serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync()])
    return this.execProtocolStream(message, { syncToFs: false })
  }
}
