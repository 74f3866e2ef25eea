// Lists page by `offset` (the contract) or by `cursor` (ext, keyset): both give a
// `pagination` object with `next_cursor`, so a client can switch to cursors at any page.
import { decodeCursor, encodeCursor, MAX_OFFSET } from '../domain/cursor.js'
import { invalidField } from '../http/errors.js'

/** A row's place in its list's order: the list's timestamp column, then the id. */
export interface SortKey {
  at: Date
  id: string
}

export interface PageRequest {
  limit: number
  /** Rows before the page: the `offset` asked for, or the position the cursor holds. */
  offset: number
  /** Set when paging by cursor: the page starts after this row, and the query skips nothing. */
  after?: SortKey
}

export interface PageQuery {
  limit?: number
  offset?: number
  cursor?: string
}

/**
 * The page a list request asks for. `scope` names the list and its filters: a cursor is valid
 * only for the scope it was issued in. A list under a parent (a program's testers, an
 * endpoint's deliveries, a project's keys) asks before it looks at the parent's id: a query it
 * cannot use is a 400 even when the parent does not exist, as the contract's order of checks
 * (400, then 404) has it.
 */
export function pageRequest(query: PageQuery, defaultLimit: number, scope: string): PageRequest {
  const limit = query.limit ?? defaultLimit
  if (query.cursor === undefined) return { limit, offset: query.offset ?? 0 }
  if (query.offset !== undefined) throw invalidField('query', '/offset', 'cannot be combined with cursor: the cursor already says where the page starts')
  const position = decodeCursor(scope, query.cursor)
  if (!position) {
    throw invalidField('query', '/cursor', "is not a cursor of this list: send the previous page's pagination.next_cursor, with the same filters")
  }
  // Only a forged cursor gets here (no list holds two billion rows): refused rather than echoed,
  // so that neither this page's offset nor its next_cursor's can pass the spec's bound.
  if (position.offset + limit > MAX_OFFSET) {
    throw invalidField('query', '/cursor', `is out of bounds: a page may not end more than ${MAX_OFFSET} rows into a list`)
  }
  return { limit, offset: position.offset, after: { at: position.at, id: position.id } }
}

/** One page from `limit + 1` rows: the extra row only says that there is more. */
export function page<Row, Item>(rows: Row[], request: PageRequest, scope: string, sortKey: (row: Row) => SortKey, toRecord: (row: Row) => Item) {
  return pageOf(rows.slice(0, request.limit), rows.length > request.limit, request, scope, sortKey, toRecord)
}

/** One page of `items`, with a cursor after the last of them when there is more. */
export function pageOf<Row, Item>(items: Row[], hasMore: boolean, request: PageRequest, scope: string, sortKey: (row: Row) => SortKey, toRecord: (row: Row) => Item) {
  const last = items.at(-1)
  const nextCursor = hasMore && last ? encodeCursor(scope, { ...sortKey(last), offset: request.offset + items.length }) : null
  return {
    data: items.map(toRecord),
    pagination: { limit: request.limit, offset: request.offset, has_more: hasMore, next_cursor: nextCursor },
  }
}
