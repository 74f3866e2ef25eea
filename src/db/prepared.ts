// Drizzle asks postgres.js for an unnamed statement unless a query is built with `.prepare()`,
// so every query paid a Parse and a Describe round trip before it ran, and PostgreSQL planned it
// again each time. postgres.js caches named statements per connection, keyed by their text, and
// re-prepares one the server no longer accepts (after a migration, say). Our SQL takes every
// value as a parameter, so the set of distinct texts is small and fixed: preparing them all is
// what a hand-written server would do.
import type { Sql } from 'postgres'

type Unsafe = Sql['unsafe']
type Begin = (...args: unknown[]) => Promise<unknown>

/** The client with every query run as a named prepared statement, inside transactions too. */
export function preparedByDefault<T extends Sql>(client: T): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        const unsafe: Unsafe = (query, parameters, options) => target.unsafe(query, parameters, { ...options, prepare: true })
        return unsafe
      }
      if (property === 'begin') {
        // begin([options,] callback): the callback's transaction client prepares alike.
        const begin: Begin = (...args) => {
          const callback = args.pop() as (tx: Sql) => unknown
          return (target.begin as unknown as Begin)(...args, (tx: Sql) => callback(preparedByDefault(tx)))
        }
        return begin
      }
      return Reflect.get(target, property, receiver)
    },
  })
}
