// What every list query shares: a page is `limit` rows from `offset`, or after a row (keyset),
// and each query is built with values (for EXPLAIN in tests) or with placeholders (the statement
// prepared once).
import { sql, type AnyColumn, type Placeholder, type SQL } from 'drizzle-orm'

export type Input<T> = T | Placeholder

export interface PageOptions {
  limit: number
  offset: number
  /** Keyset pagination: start after this row (the list's timestamp and the id) instead of skipping `offset` rows. */
  after?: { at: Date; id: string }
}

export interface PageInput {
  limit: Input<number>
  offset: Input<number>
  after?: { at: Input<string>; id: Input<string> }
}

/** The page's inputs as values: a keyset page skips nothing. */
export const pageValues = (options: PageOptions): PageInput => ({
  limit: options.limit,
  offset: options.after ? 0 : options.offset,
  after: options.after && { at: options.after.at.toISOString(), id: options.after.id },
})

/** The page's inputs as placeholders, with or without a keyset start. */
export const pagePlaceholders = (keyset: boolean): PageInput => ({
  limit: sql.placeholder('limit'),
  offset: sql.placeholder('offset'),
  after: keyset ? { at: sql.placeholder('afterAt'), id: sql.placeholder('afterId') } : undefined,
})

/** The values for pagePlaceholders, by name. */
export const pageParameters = (page: PageInput) => ({ limit: page.limit, offset: page.offset, afterAt: page.after?.at, afterId: page.after?.id })

/**
 * Rows after `after` in a list ordered by (at desc, id desc), or by (at asc, id asc) when
 * `direction` says so: one row comparison, which the list's index serves as an index condition
 * (the EXPLAIN tests check it), so a keyset page starts at its row instead of reading its way
 * there.
 */
export const rowsAfter = (at: AnyColumn, id: AnyColumn, after: PageInput['after'], direction: 'desc' | 'asc' = 'desc'): SQL | undefined =>
  after
    ? direction === 'desc'
      ? sql`(${at}, ${id}) < (${after.at}::timestamptz, ${after.id})`
      : sql`(${at}, ${id}) > (${after.at}::timestamptz, ${after.id})`
    : undefined
