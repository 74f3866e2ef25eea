// Lists page by `offset` (the contract) or by `cursor` (ext, keyset): both give a
// `pagination` object with `next_cursor`, so a client can switch to cursors at any page.
import { cursorOwner, decodeCursor, encodeCursor, MAX_OFFSET, scopeOfCursor } from '../domain/cursor.js'
import type { KeyScope } from '../db/repos/scope.js'
import { invalidField } from '../http/errors.js'
import type { AppContext } from '../http/types.js'

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
  return pageAt(query, defaultLimit, query.cursor === undefined ? undefined : decodeCursor(scope, query.cursor))
}

function pageAt(query: PageQuery, defaultLimit: number, position: ReturnType<typeof decodeCursor>): PageRequest {
  const limit = query.limit ?? defaultLimit
  if (query.cursor === undefined) return { limit, offset: query.offset ?? 0 }
  if (query.offset !== undefined) throw invalidField('query', '/offset', 'cannot be combined with cursor: the cursor already says where the page starts')
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

/** A list's scope as its cursors hold it: whose it is, then the list and its filters. */
const owned = (owner: string, scope: string) => `${owner}/${scope}`

/** A project-wide list's scope, less its owner: what the list's own rules read (a cursor's filters). */
export const listScopeOf = (cursorScope: string | undefined): string | undefined => cursorScope?.slice(cursorScope.indexOf('/') + 1)

/**
 * The page a request asks of a list the project holds directly (its programs, changelog, events,
 * webhook endpoints), read by key: like pageRequest, and a cursor is valid in the project it was
 * issued in only. It holds the tag of the key it was given to (cursorOwner); a cursor of another
 * key is accepted when that key is (or was) one of the same project's, as after a key rotation
 * mid-walk (one indexed lookup then), and is otherwise a 400: another project's list. `scope` is
 * what the page's next_cursor is then encoded with.
 */
export async function projectPageRequest(
  query: PageQuery,
  defaultLimit: number,
  listScope: string,
  project: KeyScope,
  repos: AppContext['repos'],
): Promise<PageRequest & { scope: string }> {
  const scope = owned(cursorOwner(project.keyHash), listScope)
  if (query.cursor === undefined) return { ...pageAt(query, defaultLimit, undefined), scope }
  let position = decodeCursor(scope, query.cursor)
  // Another key's cursor of this list: its owner is looked up only when it is a well-formed tag.
  const given = scopeOfCursor(query.cursor)
  const owner = given?.split('/', 1)[0] ?? ''
  if (!position && /^[0-9a-f]{16}$/.test(owner) && given === owned(owner, listScope) && (await repos.projects.sameProjectOwner(project.keyHash, owner))) {
    position = decodeCursor(given, query.cursor)
  }
  return { ...pageAt(query, defaultLimit, position), scope }
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
