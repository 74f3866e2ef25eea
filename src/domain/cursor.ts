// Keyset pagination (ext): a cursor names the last row a page ended on, so the next page starts
// right after it in the list's index, at the same cost at any depth. OFFSET, by contrast, reads
// and discards every row it skips.
//
// A cursor is opaque to clients but not secret: base64url of JSON, holding the list it belongs
// to (its scope: the list and its filters), the sort key of the last row sent, and how many rows
// came before the next page, so that `pagination.offset` stays exact. A forged cursor can only
// move within the caller's own list, which every query is scoped to anyway.

import { createHash } from 'node:crypto'
import { isAnyId } from './ids.js'

/**
 * Whose a cursor is: a tag of the API key it was given to, the first 16 hex digits of the SHA-256
 * of the stored hash's bytes (db/schema.ts's cursorOwnerOf makes the same in SQL). Not the key,
 * nor the hash the database keeps of it: a cursor travels in URLs, and its tag names the key to
 * no one.
 */
export const cursorOwner = (keyHash: string): string => createHash('sha256').update(Buffer.from(keyHash, 'hex')).digest('hex').slice(0, 16)

/** Where the next page starts: after the row (at, id) in the list's order, `offset` rows in. */
export interface Position {
  at: Date
  id: string
  offset: number
}

const VERSION = 1
/** The most rows a page may have before it: `Pagination.offset`'s maximum in openapi.yaml. */
export const MAX_OFFSET = 2_147_483_647
// Every instant of the years 1 to 9999, so that any row the database returns makes a cursor
// that is accepted back (inputs are narrower, 1000 to 9999, but rows written before that rule,
// or by hand, may not be). Not the year 0000: ISO's year 0 is PostgreSQL's 1 BC, which it does
// not read in ISO form, so a cursor there failed its list's query (a 500, not a 400). `Date.UTC`
// maps years 0..99 to 1900..1999: hence the strings.
const MIN_TIME = Date.parse('0001-01-01T00:00:00.000Z')
const MAX_TIME = Date.parse('9999-12-31T23:59:59.999Z')

/**
 * A scope as cursors are matched by it: in Unicode's NFC. A changelog cursor's scope holds its
 * label, stored in NFC since migration 0021; one issued before, for a label typed decomposed,
 * holds that form, and every cursor the server returned is accepted back (contract §11; found
 * by a review). The scopes a list works out are NFC already (labels are normalised).
 */
const canonicalScope = (scope: string): string => scope.normalize('NFC')

export function encodeCursor(scope: string, position: Position): string {
  return Buffer.from(JSON.stringify([VERSION, scope, position.at.getTime(), position.id, position.offset])).toString('base64url')
}

/**
 * The scope a cursor says it was issued in, unchecked (decodeCursor checks the whole cursor
 * against the scope the list then works out); undefined when it is no cursor of ours. A list
 * whose cursors hold filters (the changelog's status and label) reads them from here.
 */
export function scopeOfCursor(cursor: string): string | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    return Array.isArray(value) && value[0] === VERSION && typeof value[1] === 'string' ? canonicalScope(value[1]) : undefined
  } catch {
    return undefined
  }
}

/** The position a cursor of `scope` names; undefined for anything else (malformed, or another list's). */
export function decodeCursor(scope: string, cursor: string): Position | undefined {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (!Array.isArray(value) || value.length !== 5) return undefined
  const [version, ofScope, at, id, offset] = value as unknown[]
  if (version !== VERSION || typeof ofScope !== 'string' || canonicalScope(ofScope) !== scope) return undefined
  if (!Number.isInteger(at) || (at as number) < MIN_TIME || (at as number) > MAX_TIME) return undefined
  if (typeof id !== 'string' || !isAnyId(id)) return undefined
  if (!Number.isInteger(offset) || (offset as number) < 0 || (offset as number) > MAX_OFFSET) return undefined
  const position = { at: new Date(at as number), id, offset: offset as number }
  // Node's base64 decoder skips characters it does not know: only the exact text we issue counts.
  return encodeCursor(ofScope, position) === cursor ? position : undefined
}
