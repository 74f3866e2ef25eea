// Pages whose rows may hold large values (an event's record, a changelog entry's body: 100 000
// characters each, up to 600 KB once written as JSON, a hundred rows to a page) are read so that
// the memory a page takes is counted before it is taken (http/body-budget.ts). A page's first read
// withholds every value of more than INLINE_VALUE_BYTES (null in its place) and gives each
// value's size, which PostgreSQL reads from the stored value's header without reading the value.
// When one was withheld, `reserve` takes the page's bytes, or refuses them by throwing, and only
// then is the page read again, whole, in one statement (so that its rows are one snapshot, never
// a row's old dates beside its new body). A page of ordinary rows stays one statement.
import { sql, type AnyColumn, type SQL } from 'drizzle-orm'

/** A value of more bytes is withheld by a page's first read: a page holds at most a hundred of these before its bytes are counted. */
export const INLINE_VALUE_BYTES = 8192

/** How a page is read: with its large values withheld, or whole. */
export type Values = 'inline' | 'whole'

/** Takes a page's bytes before it is read whole; throws to refuse them. */
export type Reserve = (bytes: number) => void

const inlineLimit = sql.raw(String(INLINE_VALUE_BYTES))

/** A large value as a page's read of `values` selects it (null when withheld), with its size in bytes. */
export const largeValue = (value: AnyColumn | SQL, values: Values) => ({
  value: values === 'inline' ? sql<string | null>`case when octet_length(${value}) <= ${inlineLimit} then ${value} end` : sql<string | null>`${value}`,
  bytes: sql<number>`octet_length(${value})`,
})

/**
 * The page `read` returns, its large values (`key`, a column that is never null) whole: read with
 * them withheld, then, when one was, whole once `reserve` has taken the bytes of the page's values.
 */
export async function pageWithin<Row extends { bytes: number }, K extends keyof Row>(
  key: K,
  read: (values: Values) => Promise<Row[]>,
  reserve: Reserve | undefined,
): Promise<Array<Row & { [P in K]: NonNullable<Row[P]> }>> {
  let rows = await read('inline')
  if (rows.some((row) => row[key] === null)) {
    reserve?.(rows.reduce((bytes, row) => bytes + row.bytes, 0))
    rows = await read('whole')
  }
  // Nothing is withheld now, and the column is never null: every value is there.
  return rows as Array<Row & { [P in K]: NonNullable<Row[P]> }>
}
