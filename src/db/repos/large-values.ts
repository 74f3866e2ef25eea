// Pages whose rows may hold large values (an event's record, a changelog entry's body: 100 000
// characters each, up to 600 KB once written as JSON, a hundred rows to a page) are read so that
// the memory a large page takes is counted before it is taken (http/body-budget.ts).
//
// A page's first read withholds every value of more than INLINE_VALUE_BYTES stored (null in its
// place), and gives each value's size as it will be sent: for a value withheld and sent as a JSON
// string, its escaped size (a quote takes two bytes, a control character six), which PostgreSQL
// computes without sending the value (reading it, about half a millisecond a value of 100 000
// characters); for any other, its stored size, read from the value's header. When one was
// withheld, `reserve` takes the page's bytes, or refuses them by throwing, and only then is the
// page read again, whole. Its rows may have grown between the two reads (an entry written
// meanwhile): then `reserve` takes the growth too, or refuses it. A page of ordinary rows stays one
// statement, and is counted, when large, once its answer is written (at most 101 values of 8 KiB
// stored: 5 MB of JSON at the very worst).
import { sql, type AnyColumn, type SQL } from 'drizzle-orm'

/** A value of more bytes stored is withheld by a page's first read. */
export const INLINE_VALUE_BYTES = 8192

/** How a page's read has its large values: `withheld` (null, with their sizes), or `whole`. */
export type PageRead = 'withheld' | 'whole'

/** Takes a page's bytes before it is read whole; throws to refuse them. */
export type Reserve = (bytes: number) => void

/** How a value is sent: as a JSON string (escaped), or as it is stored (JSON text already). */
export type SentAs = 'string' | 'stored'

const inlineLimit = sql.raw(String(INLINE_VALUE_BYTES))

/**
 * A large value as a page's `read` selects it (null when withheld), with its size as sent
 * (`bytes`: exact for a withheld value, its stored size otherwise) and as stored (`stored`).
 */
export function largeValue(value: AnyColumn | SQL, read: PageRead, sentAs: SentAs) {
  const stored = sql`octet_length(${value})`
  if (read === 'whole') return { value: sql<string | null>`${value}`, bytes: sql<number>`${stored}`, stored: sql<number>`${stored}` }
  // to_json escapes what JSON.stringify escapes (quotes, backslashes and control characters),
  // less the two quotes around it.
  const sent = sentAs === 'stored' ? stored : sql`case when ${stored} <= ${inlineLimit} then ${stored} else octet_length(to_json(${value})::text) - 2 end`
  return {
    value: sql<string | null>`case when ${stored} <= ${inlineLimit} then ${value} end`,
    bytes: sql<number>`${sent}`,
    stored: sql<number>`${stored}`,
  }
}

const sum = (rows: { bytes: number; stored: number }[], of: 'bytes' | 'stored') => rows.reduce((total, row) => total + row[of], 0)

/**
 * The page `read` returns, its large values (`key`, a column that is never null) whole: read with
 * them withheld, then, when one was, whole once `reserve` has taken the bytes of the page's values.
 */
export async function pageWithin<Row extends { bytes: number; stored: number }, K extends keyof Row>(
  key: K,
  read: (read: PageRead) => Promise<Row[]>,
  reserve: Reserve,
): Promise<Array<Row & { [P in K]: NonNullable<Row[P]> }>> {
  let rows = await read('withheld')
  if (rows.some((row) => row[key] === null)) {
    const reserved = sum(rows, 'bytes')
    const stored = sum(rows, 'stored')
    reserve(reserved)
    rows = await read('whole')
    const grown = sum(rows, 'stored') - stored
    if (grown > 0) reserve(reserved + grown)
  }
  // Nothing is withheld now, and the column is never null: every value is there.
  return rows as Array<Row & { [P in K]: NonNullable<Row[P]> }>
}
