// Drizzle asks postgres.js for an unnamed statement unless a query is built with `.prepare()`,
// so every query paid a Parse and a Describe round trip before it ran, and PostgreSQL planned it
// again each time. postgres.js caches named statements per connection, keyed by their text (and
// the types it infers from the values: a boolean or a Date against a null), and re-prepares one
// the server no longer accepts (after a migration, say). Our SQL takes every value as a
// parameter, so the set of distinct texts is small and fixed: preparing them all is what a
// hand-written server would do.
//
// postgres.js never closes a named statement while its connection lives, so a client prepares at
// most MAX_PREPARED_TEXTS distinct texts, the first it meets, and runs any other unnamed: a
// text built from unbounded input cannot grow every connection's cache, and PostgreSQL's memory
// with it. With DB_PREPARE=false (behind PgBouncer in transaction mode, which does not keep
// named statements) postgres.js's own `prepare: false` runs every statement unnamed, these too.
import type { Sql } from 'postgres'

type Unsafe = Sql['unsafe']
type Begin = (...args: unknown[]) => Promise<unknown>

/** Distinct SQL texts prepared by one client; the app has about a hundred. */
export const MAX_PREPARED_TEXTS = 1000

/** The client with every query run as a named prepared statement, inside transactions too, up to `limit` texts. */
export function preparedByDefault<T extends Sql>(client: T, limit = MAX_PREPARED_TEXTS): T {
  return withPrepared(client, new Set(), limit)
}

function withPrepared<T extends Sql>(client: T, texts: Set<string>, limit: number): T {
  const prepare = (query: string) => {
    if (texts.has(query)) return true
    if (texts.size >= limit) return false
    texts.add(query)
    return true
  }
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        const unsafe: Unsafe = (query, parameters, options) => target.unsafe(query, parameters, prepare(query) ? { ...options, prepare: true } : options)
        return unsafe
      }
      if (property === 'begin') {
        // begin([options,] callback): the callback's transaction client prepares alike.
        const begin: Begin = (...args) => {
          const callback = args.pop() as (tx: Sql) => unknown
          return (target.begin as unknown as Begin)(...args, (tx: Sql) => callback(withPrepared(tx, texts, limit)))
        }
        return begin
      }
      return Reflect.get(target, property, receiver)
    },
  })
}
