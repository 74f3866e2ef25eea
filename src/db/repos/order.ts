import { sql, type AnyColumn, type SQL } from 'drizzle-orm'

/**
 * Descending in the exact order of our indexes: drizzle-kit declares `.desc()` index columns
 * NULLS LAST, while SQL's plain DESC means NULLS FIRST. PostgreSQL treats the two as different
 * orders (even on NOT NULL columns) and adds a Sort over every matching row for the mismatch.
 */
export const descNullsLast = (column: AnyColumn): SQL => sql`${column} desc nulls last`
/**
 * Ascending in the exact order of one of our `.desc()` indexes read backwards (DESC NULLS LAST
 * reversed is ASC NULLS FIRST), so that an ascending list needs no index of its own.
 */
export const ascNullsFirst = (column: AnyColumn): SQL => sql`${column} asc nulls first`
