// Pages whose rows may hold large values (an event's record, a changelog entry's body: 100 000
// characters each, up to 600 KB once written as JSON, a hundred rows to a page) are read so that
// the memory a large page takes is counted before it is taken (http/body-budget.ts).
//
// A page's first read withholds every value of more than INLINE_VALUE_BYTES stored (null in its
// place, the size read from the value's header), and gives the size each withheld value will be
// sent at: for one sent as a JSON string, its escaped size (a quote takes two bytes, a control
// character six), which PostgreSQL computes without sending the value (reading it, about half a
// millisecond a value of 100 000 characters). When one was withheld, `reserve` takes those bytes,
// or refuses them by throwing, and only then is the page read again, whole. The rest of the answer
// (its small values and other fields), and whatever the page grew by between the two reads (an
// entry written meanwhile), is counted once the answer is written, and refused if it does not fit
// (body-budget.ts). A page of ordinary rows stays one statement, and is counted, when large, once
// its answer is written (at most 101 values of 8 KiB stored: 5 MB of JSON at the very worst).
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
 * A large value as a page's `read` selects it: on the first read, null when withheld, with its
 * size as sent (`bytes`, null for a value not withheld: a page of small values costs one column);
 * on the whole read, the value alone (`bytes` null).
 */
export function largeValue(value: AnyColumn | SQL, read: PageRead, sentAs: SentAs) {
  if (read === 'whole') return { value: sql<string | null>`${value}`, bytes: sql<number | null>`null::int` }
  const stored = sql`octet_length(${value})`
  // to_json escapes what JSON.stringify escapes (quotes, backslashes and control characters),
  // less the two quotes around it.
  const sent = sentAs === 'stored' ? stored : sql`octet_length(to_json(${value})::text) - 2`
  return {
    value: sql<string | null>`case when ${stored} <= ${inlineLimit} then ${value} end`,
    bytes: sql<number | null>`case when ${stored} > ${inlineLimit} then ${sent} end`,
  }
}

/**
 * The page `read` returns, its large values (`key`, a column that is never null) whole: read with
 * them withheld, then, when one was, whole once `reserve` has taken the bytes of the values
 * withheld. What the rest of the answer takes is counted once it is written, with whatever the
 * page grew by between the two reads (http/body-budget.ts).
 */
export async function pageWithin<Row extends { bytes: number | null }, K extends keyof Row>(
  key: K,
  read: (read: PageRead) => Promise<Row[]>,
  reserve: Reserve,
): Promise<Array<Row & { [P in K]: NonNullable<Row[P]> }>> {
  let rows = await read('withheld')
  if (rows.some((row) => row[key] === null)) {
    reserve(rows.reduce((bytes, row) => bytes + (row.bytes ?? 0), 0))
    rows = await read('whole')
  }
  // Nothing is withheld now, and the column is never null: every value is there.
  return rows as Array<Row & { [P in K]: NonNullable<Row[P]> }>
}
