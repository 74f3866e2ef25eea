// Entity tags of the resources a client may change conditionally (If-Match on PATCH and DELETE:
// beta programs, testers, changelog entries and webhook endpoints). The database computes them from the row, so a
// conditional write checks the tag in the very statement that takes the row (UPDATE or DELETE
// ... WHERE <tag> IN (...), or the locking read of a changelog update): of two writes holding one
// tag, the second waits for the first's row lock, finds the tag changed and writes nothing. The
// same expression gives the ETag of the GET and PATCH answers, so the tag a client reads is the
// tag a write compares.
import { inArray, sql, type SQL } from 'drizzle-orm'

/**
 * What a conditional write requires of the current representation: anything (`If-Match: *`,
 * which only asks that the resource exists) or one of these tags (none: nothing can match).
 */
export type Precondition = '*' | readonly string[]

// Bump with any change to how a representation is made from the same row (a field added, a
// default changed), so that no client keeps a copy of the old one as current.
const REPRESENTATION = sql.raw(`'1:'`)

/**
 * The strong ETag of the representation whose state `version` is: the row (`${table}`, a
 * whole-row reference, for resources that are one row) or the parts that decide it. A hash, so
 * that the tag says nothing of the row; the same shape as http/conditional.ts's entityTag.
 */
export const entityTagOf = (version: SQL): SQL<string> =>
  sql<string>`'"' || translate(left(encode(sha256(convert_to(${REPRESENTATION} || (${version})::text, 'UTF8')), 'base64'), 27), '+/', '-_') || '"'`

/** The condition a write adds to its WHERE under `precondition`; none without a list of tags. */
export function tagMatches(tag: SQL<string>, precondition: Precondition | undefined): SQL | undefined {
  if (precondition === undefined || precondition === '*') return undefined
  return precondition.length > 0 ? inArray(tag, [...precondition]) : sql`false`
}

/** Whether a tag read satisfies `precondition` (for the read that tells a 412 from a 404). */
export const tagSatisfies = (tag: string, precondition: Precondition | undefined): boolean =>
  precondition === undefined || precondition === '*' || precondition.includes(tag)
