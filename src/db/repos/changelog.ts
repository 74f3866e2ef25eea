import { and, eq, getTableColumns, gt, inArray, isNull, lte, sql, type AnyColumn, type SQL } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import { localeKey } from '../../domain/locale.js'
import type { PublishedAt, PublishingState } from '../../domain/publishing.js'
import type { Database } from '../client.js'
import { entityTagOf, tagMatches, tagSatisfies, type Precondition } from './etag.js'
import { ascNullsFirst, descNullsLast } from './order.js'
import { pageParameters, pagePlaceholders, pageValues, rowsAfter, type Input, type PageInput, type PageOptions } from './page.js'
import { largeValue, pageWithin, type PageRead, type Reserve } from './large-values.js'
import { preparedOnce } from './prepare-once.js'
import { projectIdOf, projectIdPlaceholder, scopeParameters, scopeShape, type ProjectIdInput, type ProjectScope, type ScopeShape } from './scope.js'
import { changelog_entries, changelog_translations, projects } from '../schema.js'
import { newTransaction, type Transact } from './transact.js'

export type EntryRow = typeof changelog_entries.$inferSelect
export type TranslationRow = typeof changelog_translations.$inferSelect

/**
 * An entry as a reader sees it: in a translation's locale, title and body when one was asked for
 * and exists; `status` read off `published_at` by the database's clock in the statement that
 * read the entry (the same now() a list filters by, so a list and its entries' status agree).
 */
export type EntryView = Pick<EntryRow, 'id' | 'title' | 'body' | 'labels' | 'published_at' | 'locale' | 'version' | 'created_at' | 'updated_at'> & {
  status: PublishingState
}

/** An entry as a page's read has it (large-values.ts): its body null when withheld, with its size as sent. */
type ListedEntry = Omit<EntryView, 'body'> & { body: string | null; bytes: number | null }

/** An entry as one is read or written alone, with the ETag of that view (etag.ts). */
export type TaggedEntry = EntryView & { etag: string }

/**
 * `published`: the entry in its base locale when this write announced its publication (it left
 * the entry visible, and no event had announced it yet): its `changelog_entry.published` event is
 * the caller's to record, in the same transaction.
 */
export type EntryUpdate = { outcome: 'updated'; entry: TaggedEntry; published?: EntryView } | { outcome: 'not_found' } | { outcome: 'precondition_failed' }

/** A new entry; `published` as in EntryUpdate: the entry was visible at once. */
export interface EntryCreation {
  entry: EntryView
  published: boolean
}

/** An entry whose scheduled time came, announced by the sweep: its project, and the entry in its base locale. */
export type DueEntry = EntryView & { project_id: string }
export type EntryDeletion = 'deleted' | 'not_found' | 'precondition_failed'

/** Which entries GET /v1/changelog lists (contract §8): `published` is what a visitor sees. */
export type ListStatus = 'published' | 'scheduled' | 'draft' | 'all'

/** The column each list is ordered by (then by id), whose value a cursor holds. */
export const LIST_ORDER_COLUMN = {
  published: 'published_at',
  scheduled: 'published_at',
  draft: 'updated_at',
  all: 'created_at',
} as const satisfies Record<ListStatus, keyof EntryView>

export interface NewEntry {
  title: string
  body: string
  /** `body` rendered (src/portal/markdown-rendering.ts); null when no worker could render it now (the next start does). */
  body_html: string | null
  labels: string[]
  /** Null when the request gave none (the API reads the default, the page shows none). */
  version: string | null
  locale: string
  published_at: PublishedAt
}

/** A body is always written with its HTML, so that the two never disagree. */
interface BodyWrite {
  body: string
  body_html: string | null
}

/** What an update writes; every field absent is left as it is. */
export interface EntryPatch {
  entry: Partial<Pick<EntryRow, 'title' | 'labels' | 'version'> & { published_at: PublishedAt } & BodyWrite>
  /** Title and body of a translation, written under `locale` (created when it does not exist). */
  translation?: { locale: string; title?: string } & Partial<BodyWrite>
}

/** The entry under its row lock, with the translation in the locale the update names, if any. */
export interface CurrentEntry {
  entry: EntryRow
  translation: TranslationRow | undefined
  /** The database clock of the updating transaction. */
  now: Date
}

/** The project as the public pages show it, with when they last changed beyond their entries (schema.ts, public_changed_at). */
export interface PortalProject {
  id: string
  name: string
  created_at: Date
  public_changed_at: Date | null
}

/** What the public page and feeds show that can change, read without any body (see portalState). */
export interface PortalState {
  project: PortalProject
  /** The page's entries, newest first. */
  entries: PortalEntryState[]
  hasMore: boolean
}

/** What an entry's permalink page shows that can change, read without its body (see portalEntryState). */
export interface PortalEntryPageState {
  project: PortalProject
  entry: PortalEntryState
}

export interface PortalEntryState {
  id: string
  published_at: Date
  updated_at: Date
  /** When the translation shown last changed; null when the entry is shown in its base locale. */
  translation_updated_at: Date | null
  /** The length in bytes of the HTML shown; null while the row awaits its HTML. */
  html_bytes: number | null
}

/** An entry as the portal shows it (published, so no status): its stored HTML, and its Markdown only where that HTML is missing. */
export type PortalEntry = Omit<EntryView, 'body' | 'status'> & { body_html: string | null; body_without_html: string | null }

export interface ListOptions extends PageOptions {
  /** Which entries, in that list's order; `published` when absent. */
  status?: ListStatus
  /** Only entries with this label, already normalised (domain/labels.ts). */
  label?: string
  /** Return each entry in this locale where it has a translation. */
  locale?: string
}

/** What a page of the public changelog asks for: the published list, by offset only. */
export interface PortalOptions {
  limit: number
  offset: number
  locale?: string
  /** Normalised, as in ListOptions. */
  label?: string
}

interface IdsInput extends PageInput {
  projectId: ProjectIdInput
  status: ListStatus
  label?: Input<string>
}

interface ListInput extends IdsInput {
  localeKey?: Input<string>
}

/**
 * How a page's rows are read. `direct`: straight from the list's index, the page's rows whole,
 * as the simplest query would (what a first page, and every cursor page, costs least by: one
 * index scan and the page's heap rows). `deferred`: the page's ids from the list's index alone,
 * then only those rows whole, which costs a primary-key lookup a row (about three times the
 * first page's work) but skips index entries instead of whole rows, so it wins past a few
 * hundred rows of offset.
 */
export type ListPlan = 'direct' | 'deferred'

/**
 * Offsets up to this take the direct plan. Measured with pgbench on the benchmark's data (the
 * project's rows interleaved with other projects', so each row skipped is about one heap page):
 * the direct plan serves 2.3 times the pages a second of the deferred join at offset 0, 1.7 at
 * 200, 1.5 at 300, and about as many at 500; at 10 000 it reads 10 000 rows whole, the deferred
 * join only their index entries. A cursor page skips nothing: direct.
 */
export const DIRECT_MAX_OFFSET = 300

export const listPlan = (page: { offset: number; after?: unknown }): ListPlan => (page.after || page.offset <= DIRECT_MAX_OFFSET ? 'direct' : 'deferred')

// Timestamps are written by the database clock, truncated (a timestamptz(3) column would round
// now() up half the time), so a value written "now" is never after now() in the next query.
const dbNow = sql`date_trunc('milliseconds', now())`
// updated_at moves forward on every write of the entry or of a translation's content, even two
// within one millisecond: a client can tell a changed entry by it, and it is the version in the
// entry's ETag (see entryTag below).
const nextUpdatedAt = sql`greatest(${dbNow}, ${changelog_entries.updated_at} + interval '1 millisecond')`
const publishedAtValue = (value: PublishedAt): Date | null | SQL => (value === 'now' ? dbNow : value)

/**
 * announced_at as a write leaves it (see schema.ts) when `publishedAt` is the entry's date after
 * the write: the publication already announced while the entry stays visible, this one when the
 * write makes it visible (its event then goes with the write), none while it is a draft or
 * scheduled, so that its next publication fires again.
 */
const announcedAtAfter = (publishedAt: SQL | AnyColumn) =>
  sql`case when ${publishedAt} <= now() then coalesce(${changelog_entries.announced_at}, ${publishedAt}) end`
/** A date to write as published_at, as SQL for announcedAtAfter. */
const publishedAtSql = (value: PublishedAt): SQL =>
  value === 'now' ? dbNow : value === null ? sql`null::timestamptz` : sql`${sql.param(value, changelog_entries.published_at)}::timestamptz`

const toView = (entry: EntryRow & { status: PublishingState }, translation?: Pick<TranslationRow, 'title' | 'body' | 'locale'>): EntryView => ({
  id: entry.id,
  title: translation?.title ?? entry.title,
  body: translation?.body ?? entry.body,
  labels: entry.labels,
  published_at: entry.published_at,
  locale: translation?.locale ?? entry.locale,
  version: entry.version,
  created_at: entry.created_at,
  updated_at: entry.updated_at,
  status: entry.status,
})

/**
 * Marks the project's public changelog as changed now (schema.ts, public_changed_at), on every
 * write of an entry it shows: one that leaves a page or feed (deleted, unpublished, a label
 * taken off, a translation deleted) is a change that no shown entry's times record. The feeds'
 * Last-Modified moves with it, so that a reader polling with If-Modified-Since alone sees the
 * removal.
 */
const publicChanged = (tx: Database, projectId: string) => tx.update(projects).set({ public_changed_at: dbNow }).where(eq(projects.id, projectId))

/** `transact`: how a write of several statements gets its transaction (transact.ts). */
export function changelogRepo(db: Database, transact: Transact = newTransaction(db)) {
  const e = changelog_entries
  const t = changelog_translations
  const scoped = (projectId: ProjectIdInput, id: Input<string>) => and(eq(e.project_id, projectId), eq(e.id, id))

  // publishingState (domain/publishing.ts) in SQL, by the database's clock: the same now() as the
  // lists' conditions below, one instant within a statement, so an entry a list selected as
  // published always says `published`.
  const status = sql<PublishingState>`case when ${e.published_at} is null then 'draft' when ${e.published_at} > now() then 'scheduled' else 'published' end`
  /** An entry row with its status, as an insert or update returns it. */
  const rowWithStatus = { ...getTableColumns(e), status }

  /**
   * The ETag of an entry in a locale, from what its view is made of: the entry's updated_at,
   * which every write of the entry or of a translation's content moves (so it stands for both),
   * its status (which the clock changes), and the key of the translation shown (NULL for none: a
   * deleted translation changes the tag of its locale's view, and of no other).
   *
   * Every write of an entry or of its translations holds the entry's row lock, so a tag read
   * under that lock is current until the write. It must be read by a statement that starts once
   * the lock is held when a translation is part of it: the locking statement itself sees other
   * tables as they were when it started, before it may have waited for the lock.
   */
  const entryTag = (shownTranslationKey: SQL | typeof t.locale_key) => entityTagOf(sql`row(${e.updated_at}, ${status}, ${shownTranslationKey})`)
  const baseTag = entryTag(sql`null::text`)
  /** The entry's tag in the locale `key` names, read with the translation shown there (none without a key). */
  const taggedTranslation = (tx: Database, id: string, key: string | undefined) =>
    tx.select({ translation: t, etag: entryTag(t.locale_key) }).from(e).leftJoin(t, translationOf(key)).where(eq(e.id, id))

  /**
   * Each list's entries and the direction of its order, on LIST_ORDER_COLUMN then the id: the
   * order of its index (schema.ts), so that none sorts. `published` and `scheduled` read
   * changelog_entries_project_published_idx forwards and backwards, `draft` its partial index
   * (whose condition this one matches) and `all` the created_at index.
   */
  const lists: Record<ListStatus, { where: SQL | undefined; direction: 'asc' | 'desc' }> = {
    published: { where: lte(e.published_at, sql`now()`), direction: 'desc' },
    scheduled: { where: gt(e.published_at, sql`now()`), direction: 'asc' },
    draft: { where: isNull(e.published_at), direction: 'desc' },
    all: { where: undefined, direction: 'desc' },
  }
  const orderColumn = (list: ListStatus) => e[LIST_ORDER_COLUMN[list]]
  const orderOf = (list: ListStatus) => {
    const by = lists[list].direction === 'desc' ? descNullsLast : ascNullsFirst
    return [by(orderColumn(list)), by(e.id)]
  }
  // An array's containment, so that a GIN index on labels could serve it one day; today the
  // label is a filter on the list's index scan, in the list's order (see the README on its cost).
  const labelled = (label: Input<string> | undefined) => (label === undefined ? undefined : sql`${e.labels} @> array[${label}::text]`)

  /** The entry in its base locale, for a read that asks for none: no translation joined. */
  const baseView = {
    id: e.id,
    title: e.title,
    body: e.body,
    labels: e.labels,
    published_at: e.published_at,
    locale: e.locale,
    version: e.version,
    created_at: e.created_at,
    updated_at: e.updated_at,
    status,
  }
  /** The entry in the joined translation's locale, where it has one. */
  const view = {
    ...baseView,
    title: sql<string>`coalesce(${t.title}, ${e.title})`,
    body: sql<string>`coalesce(${t.body}, ${e.body})`,
    locale: sql<string>`coalesce(${t.locale}, ${e.locale})`,
  }
  const { body: _body, status: _status, ...viewWithoutBody } = view
  /** The translation in the asked locale; without a locale, the join matches nothing. */
  const translationOf = (key: Input<string> | undefined) => and(eq(t.entry_id, e.id), key === undefined ? sql`false` : eq(t.locale_key, key))

  /** What a list reads of an entry: its view (`shown`), the body as a page's `read` selects it (large-values.ts), with its size. */
  const listed = <V extends { body: AnyColumn | SQL }>(shown: V, read: PageRead) => {
    const { value, bytes } = largeValue(shown.body, read, 'string')
    return { ...shown, body: value, bytes }
  }

  /**
   * A page of one list, one row beyond `limit` telling whether another exists, read by `plan`
   * (ListPlan). Either reads the list's index in its order, nulls included, so nothing sorts
   * more than the page; a cursor (`after`) starts right at its row in the index. The translation
   * is joined only when a locale is asked for. Tests hold every list's plans to that with EXPLAIN.
   */
  function listQuery(input: ListInput, plan: ListPlan, read: PageRead) {
    if (plan === 'direct') {
      const rows =
        input.localeKey === undefined
          ? db.select(listed(baseView, read)).from(e).$dynamic()
          : db.select(listed(view, read)).from(e).leftJoin(t, translationOf(input.localeKey)).$dynamic()
      return rows
        .where(pageWhere(input))
        .orderBy(...orderOf(input.status))
        .limit(input.limit)
        .offset(input.offset)
    }
    // The deferred join: the page's ids from the index alone (an index-only scan where the
    // visibility map allows and no label is asked for), then only those rows whole.
    const ids = pageIds(input).as('page')
    const rows =
      input.localeKey === undefined
        ? db.select(listed(baseView, read)).from(ids).innerJoin(e, eq(e.id, ids.id)).$dynamic()
        : db.select(listed(view, read)).from(ids).innerJoin(e, eq(e.id, ids.id)).leftJoin(t, translationOf(input.localeKey)).$dynamic()
    return rows.orderBy(...orderOf(input.status))
  }

  /** The rows of a list (its project, status, label and where a cursor starts it). */
  function pageWhere(input: IdsInput) {
    const { where, direction } = lists[input.status]
    return and(eq(e.project_id, input.projectId), where, labelled(input.label), rowsAfter(orderColumn(input.status), e.id, input.after, direction))
  }

  /** The ids of a page (the deferred join's index part, shared with the portal). */
  function pageIds(input: IdsInput) {
    return db
      .select({ id: e.id })
      .from(e)
      .where(pageWhere(input))
      .orderBy(...orderOf(input.status))
      .limit(input.limit)
      .offset(input.offset)
  }

  // The HTML and body shown for an entry: its translation's when the join found one (a
  // translation's HTML may be missing where the entry's is not, so no coalesce).
  const translated = sql`${t.entry_id} is not null`
  const shownHtml = sql<string | null>`case when ${translated} then ${t.body_html} else ${e.body_html} end`

  /** What a portal page's ETag is made of, per entry shown: the list's and the permalink's alike. */
  const portalStateColumns = {
    name: projects.name,
    project_created_at: projects.created_at,
    project_public_changed_at: projects.public_changed_at,
    id: e.id,
    published_at: e.published_at,
    updated_at: e.updated_at,
    translation_updated_at: t.updated_at,
    // The stored length, read without decompressing the value.
    html_bytes: sql<number | null>`octet_length(${shownHtml})`.mapWith(Number),
  }

  /**
   * Everything the public page and feeds show that can change, without their bodies: the
   * project's name, and the page's entries with when each (and its translation) last changed
   * and the size of its HTML. One statement, on the project's primary key and the list's index
   * (the deferred join of a deep list page), so a conditional request that ends in a 304 costs
   * this and nothing else. No row: no such project.
   */
  function portalStateQuery(input: { projectId: Input<string>; localeKey?: Input<string>; label?: Input<string>; limit: Input<number>; offset: Input<number> }) {
    const ids = pageIds({ ...input, status: 'published' }).as('page')
    return db
      .select(portalStateColumns)
      .from(projects)
      .leftJoin(ids, sql`true`)
      .leftJoin(e, eq(e.id, ids.id))
      .leftJoin(t, translationOf(input.localeKey))
      .where(eq(projects.id, input.projectId))
      .orderBy(...orderOf('published'))
  }

  /**
   * The permalink's counterpart of portalStateQuery: one published entry of the project, by
   * primary key, with the project's name and what changes the page, without the body. No row: no
   * such project, no such entry in it, or an entry not (or no longer, or not yet) published.
   */
  function portalEntryStateQuery(input: { projectId: Input<string>; id: Input<string>; localeKey?: Input<string> }) {
    return db
      .select(portalStateColumns)
      .from(e)
      .innerJoin(projects, eq(projects.id, e.project_id))
      .leftJoin(t, translationOf(input.localeKey))
      .where(and(scoped(input.projectId, input.id), lte(e.published_at, sql`now()`)))
  }

  /** What the page and feeds show of these entries of the project: the view with the stored HTML instead of the Markdown. */
  const portalEntriesQuery = (projectId: Input<string>, ids: Input<string>, key: Input<string> | undefined) =>
    db
      .select({
        ...viewWithoutBody,
        body_html: shownHtml,
        // Only where the HTML is missing (a row awaiting its backfill) is the Markdown read, to be shown as text.
        body_without_html: sql<string | null>`case when ${shownHtml} is null then coalesce(${t.body}, ${e.body}) end`,
      })
      .from(e)
      .leftJoin(t, translationOf(key))
      // Still published: an entry unpublished since the state was read shows nothing of its draft.
      .where(and(eq(e.project_id, projectId), sql`${e.id} = any(${ids}::text[])`, lte(e.published_at, sql`now()`)))

  /** One entry of the project, in the translation `localeKey` names when it has one. */
  const getQuery = (projectId: ProjectIdInput, id: Input<string>, key: Input<string> | undefined) =>
    key === undefined
      ? db.select({ ...baseView, etag: baseTag }).from(e).where(scoped(projectId, id))
      : db
          .select({ ...view, etag: entryTag(t.locale_key) })
          .from(e)
          .leftJoin(t, translationOf(key))
          .where(scoped(projectId, id))

  const listValues = (options: ListOptions): Omit<ListInput, 'projectId'> => ({
    status: options.status ?? 'published',
    label: options.label,
    localeKey: options.locale === undefined ? undefined : localeKey(options.locale),
    ...pageValues({ ...options, limit: options.limit + 1 }),
  })

  // Hot reads: built once per shape, run as prepared statements.
  const p = sql.placeholder
  interface ListShape extends Record<string, string> {
    status: ListStatus
    label: 'any' | 'label'
    locale: 'base' | 'locale'
    page: 'offset' | 'after'
    plan: ListPlan
    scope: ScopeShape
    read: PageRead
  }
  const preparedList = preparedOnce('changelog_list', (shape: ListShape, name) =>
    listQuery(
      {
        projectId: projectIdPlaceholder(shape.scope),
        status: shape.status,
        label: shape.label === 'label' ? p('label') : undefined,
        localeKey: shape.locale === 'locale' ? p('localeKey') : undefined,
        ...pagePlaceholders(shape.page === 'after'),
      },
      shape.plan,
      shape.read,
    ).prepare(name),
  )
  const preparedGet = preparedOnce('changelog_get', (shape: { locale: 'base' | 'locale'; scope: ScopeShape }, name) =>
    getQuery(projectIdPlaceholder(shape.scope), p('id'), shape.locale === 'locale' ? p('localeKey') : undefined).prepare(name),
  )

  const preparedPortalState = preparedOnce('changelog_portal_state', (shape: { locale: 'base' | 'locale'; label: 'any' | 'label' }, name) =>
    portalStateQuery({
      projectId: p('projectId'),
      localeKey: shape.locale === 'locale' ? p('localeKey') : undefined,
      label: shape.label === 'label' ? p('label') : undefined,
      limit: p('limit'),
      offset: p('offset'),
    }).prepare(name),
  )
  const preparedPortalEntryState = preparedOnce('changelog_portal_entry_state', (shape: { locale: 'base' | 'locale' }, name) =>
    portalEntryStateQuery({ projectId: p('projectId'), id: p('id'), localeKey: shape.locale === 'locale' ? p('localeKey') : undefined }).prepare(name),
  )
  const preparedPortalEntries = preparedOnce('changelog_portal_entries', (shape: { locale: 'base' | 'locale' }, name) =>
    portalEntriesQuery(p('projectId'), p('ids'), shape.locale === 'locale' ? p('localeKey') : undefined).prepare(name),
  )

  /** Entries whose time has come and that no event announced, soonest first, locked unless another transaction holds them. */
  const due = and(lte(e.published_at, sql`now()`), isNull(e.announced_at))
  /** announceDue's claim: it reads changelog_entries_unannounced_idx, whose condition `due` implies (a test holds it to that). */
  const dueClaim = (limit: number) => db.select({ id: e.id }).from(e).where(due).orderBy(e.published_at).limit(limit).for('update', { skipLocked: true })

  return {
    /** The portal's state query with values, for EXPLAIN. */
    portalStateQuery: (projectId: string, options: PortalOptions) =>
      portalStateQuery({
        projectId,
        localeKey: options.locale === undefined ? undefined : localeKey(options.locale),
        label: options.label,
        limit: options.limit + 1,
        offset: options.offset,
      }),

    /** The state of a page of the public changelog (see PortalState); undefined when there is no such project. */
    async portalState(projectId: string, options: PortalOptions): Promise<PortalState | undefined> {
      const key = options.locale === undefined ? undefined : localeKey(options.locale)
      const rows = await preparedPortalState({ locale: key === undefined ? 'base' : 'locale', label: options.label === undefined ? 'any' : 'label' }).execute({
        projectId,
        localeKey: key,
        label: options.label,
        limit: options.limit + 1,
        offset: options.offset,
      })
      if (rows.length === 0) return undefined
      // A project without entries on this page is one row with no entry.
      const entries = rows.flatMap((row): PortalEntryState[] =>
        row.id === null
          ? []
          : [{ id: row.id, published_at: row.published_at!, updated_at: row.updated_at!, translation_updated_at: row.translation_updated_at, html_bytes: row.html_bytes }],
      )
      const { name, project_created_at, project_public_changed_at } = rows[0]!
      return {
        project: { id: projectId, name, created_at: project_created_at, public_changed_at: project_public_changed_at },
        entries: entries.slice(0, options.limit),
        hasMore: entries.length > options.limit,
      }
    },

    /** The permalink's state query with values, for EXPLAIN. */
    portalEntryStateQuery: (projectId: string, id: string, locale?: string) =>
      portalEntryStateQuery({ projectId, id, localeKey: locale === undefined ? undefined : localeKey(locale) }),

    /** The state of one published entry's permalink page; undefined when the project has no such published entry. */
    async portalEntryState(projectId: string, id: string, locale?: string): Promise<PortalEntryPageState | undefined> {
      const key = locale === undefined ? undefined : localeKey(locale)
      const [row] = await preparedPortalEntryState({ locale: key === undefined ? 'base' : 'locale' }).execute({ projectId, id, localeKey: key })
      if (!row) return undefined
      const { name, project_created_at, project_public_changed_at, published_at, updated_at, translation_updated_at, html_bytes } = row
      return {
        project: { id: projectId, name, created_at: project_created_at, public_changed_at: project_public_changed_at },
        entry: { id, published_at: published_at!, updated_at, translation_updated_at, html_bytes },
      }
    },

    /** These entries of the project as the portal shows them, in the order of `ids`. */
    async portalEntries(projectId: string, ids: string[], locale?: string): Promise<PortalEntry[]> {
      const key = locale === undefined ? undefined : localeKey(locale)
      const rows = await preparedPortalEntries({ locale: key === undefined ? 'base' : 'locale' }).execute({
        projectId,
        // An array literal: the ids come from portalState, all of the shape ch_ and [0-9A-Za-z].
        ids: `{${ids.join(',')}}`,
        localeKey: key,
      })
      const byId = new Map(rows.map((row) => [row.id, row]))
      return ids.flatMap((id) => byId.get(id) ?? [])
    },

    /** The list query with values, by the plan list() would take for this page (or `plan`), as a page is first read (or `read`), for EXPLAIN and the benchmark's SQL. */
    listQuery: (scope: ProjectScope, options: ListOptions, plan: ListPlan = listPlan(options), read: PageRead = 'withheld') =>
      listQuery({ projectId: projectIdOf(scope), ...listValues(options) }, plan, read),
    /** The read of one entry with values, for tests and the benchmark's SQL. */
    getQuery: (scope: ProjectScope, id: string, locale?: string) => getQuery(projectIdOf(scope), id, locale === undefined ? undefined : localeKey(locale)),

    /** A page of a list; `reserve` takes the bytes of its bodies before they are read when one is large (large-values.ts). */
    async list(scope: ProjectScope, options: ListOptions, reserve: Reserve): Promise<{ entries: EntryView[]; hasMore: boolean }> {
      const input = listValues(options)
      const shape: ListShape = {
        status: input.status,
        label: input.label === undefined ? 'any' : 'label',
        locale: input.localeKey === undefined ? 'base' : 'locale',
        page: input.after ? 'after' : 'offset',
        plan: listPlan(options),
        scope: scopeShape(scope),
        read: 'withheld',
      }
      const parameters = { ...scopeParameters(scope), label: input.label, localeKey: input.localeKey, ...pageParameters(input) }
      const rows = await pageWithin<ListedEntry, 'body'>('body', (read) => preparedList({ ...shape, read }).execute(parameters), reserve)
      return { entries: rows.slice(0, options.limit), hasMore: rows.length > options.limit }
    },

    /** Any entry of the project, whatever its publishing state. */
    async get(scope: ProjectScope, id: string, locale?: string): Promise<TaggedEntry | undefined> {
      const statement = preparedGet({ locale: locale === undefined ? 'base' : 'locale', scope: scopeShape(scope) })
      const [row] = await statement.execute({ ...scopeParameters(scope), id, localeKey: locale === undefined ? undefined : localeKey(locale) })
      return row
    },

    /**
     * Announces up to `limit` entries whose time has come (visible, never announced: scheduled
     * entries whose published_at passed), soonest first: sets their announced_at and returns
     * them, for their events to be recorded in the same transaction. Rows another transaction
     * holds (another instance's sweep, a write of the entry) are skipped, not waited for; the
     * UPDATE checks the condition again on the row it locks, so an entry is announced once per
     * publication, however many sweeps run at once.
     */
    async announceDue(limit: number): Promise<DueEntry[]> {
      const rows = await db
        .update(e)
        .set({ announced_at: sql`${e.published_at}` })
        .where(and(due, inArray(e.id, dueClaim(limit))))
        .returning(rowWithStatus)
      return rows.map((row) => ({ ...toView(row), project_id: row.project_id }))
    },
    /** announceDue's claim, for EXPLAIN. */
    dueClaim,

    /** Writes the entry; when it is visible at once, its publication is announced with it (EntryCreation). */
    async create(projectId: string, input: NewEntry): Promise<EntryCreation> {
      const [row] = await db
        .insert(e)
        .values({
          id: newId('ch'),
          project_id: projectId,
          ...input,
          published_at: publishedAtValue(input.published_at),
          // An insert has no announced_at to keep: the expression reads as `case when ... then published_at end`.
          announced_at: sql`case when ${publishedAtSql(input.published_at)} <= now() then ${publishedAtSql(input.published_at)} end`,
          created_at: dbNow,
          updated_at: dbNow,
        })
        .returning(rowWithStatus)
      return { entry: toView(row!), published: row!.announced_at !== null }
    },

    /**
     * Reads the entry under a row lock, lets `decide` turn it into a patch (or throw, which
     * rolls back), and writes the patch. The lock serialises updates of one entry, so a
     * decision that depends on the current state (keeping a published date, creating a
     * translation) is never taken on a stale read; for the same reason the precondition is
     * checked on the tag the locking read computes: nothing can change the entry between that
     * check and the write.
     */
    update(projectId: string, id: string, locale: string | undefined, precondition: Precondition | undefined, decide: (current: CurrentEntry) => EntryPatch): Promise<EntryUpdate> {
      const key = locale === undefined ? undefined : localeKey(locale)
      return transact(async (tx): Promise<EntryUpdate> => {
        const [current] = await tx
          .select({ entry: e, status, now: sql`now()`.mapWith(e.updated_at), etag: baseTag })
          .from(e)
          .where(scoped(projectId, id))
          .for('update')
        if (!current) return { outcome: 'not_found' }
        let translation: TranslationRow | undefined
        let etag = current.etag
        if (key !== undefined) {
          const [read] = await taggedTranslation(tx, id, key)
          translation = read!.translation ?? undefined
          etag = read!.etag
        }
        if (!tagSatisfies(etag, precondition)) return { outcome: 'precondition_failed' }

        const patch = decide({ entry: current.entry, translation, now: current.now })
        const written = patch.translation && (patch.translation.title !== undefined || patch.translation.body !== undefined)
        if (Object.keys(patch.entry).length === 0 && !written) {
          return { outcome: 'updated', entry: { ...toView({ ...current.entry, status: current.status }, translation), etag } }
        }

        if (written) {
          const { locale: tag, title, body, body_html } = patch.translation!
          ;[translation] = await tx
            .insert(t)
            .values({
              entry_id: id,
              locale_key: localeKey(tag),
              locale: tag,
              // When the translation was deleted since it was read, the update re-creates it
              // from what was read rather than failing on a missing title.
              title: title ?? translation?.title ?? '',
              body: body ?? translation?.body ?? '',
              body_html: body_html !== undefined ? body_html : translation ? translation.body_html : '',
              created_at: dbNow,
              updated_at: dbNow,
            })
            .onConflictDoUpdate({
              target: [t.entry_id, t.locale_key],
              set: { ...(title !== undefined ? { title } : {}), ...(body !== undefined ? { body, body_html } : {}), updated_at: dbNow },
            })
            .returning()
        }

        const { published_at, ...fields } = patch.entry
        const [entry] = await tx
          .update(e)
          .set({
            ...fields,
            ...(published_at !== undefined ? { published_at: publishedAtValue(published_at) } : {}),
            announced_at: announcedAtAfter(published_at !== undefined ? publishedAtSql(published_at) : e.published_at),
            updated_at: nextUpdatedAt,
          })
          .where(scoped(projectId, id))
          .returning({ ...rowWithStatus, etag: entryTag(translation && key !== undefined ? sql`${key}::text` : sql`null::text`) })
        const { etag: writtenTag, ...row } = entry!
        // The entry may have left a page or feed (unpublished, rescheduled, a label taken off)
        // that its own updated_at, no longer shown there, cannot tell.
        if (current.entry.published_at !== null && current.entry.published_at <= current.now) await publicChanged(tx, projectId)
        return {
          outcome: 'updated',
          entry: { ...toView(row, patch.translation ? translation : undefined), etag: writtenTag },
          ...(current.entry.announced_at === null && row.announced_at !== null ? { published: toView(row) } : {}),
        }
      })
    },

    /**
     * Removes the entry and, by the cascade, its translations; under a precondition, only while
     * its tag (in its base locale) matches. An entry the public changelog showed leaves a mark
     * on its project (publicChanged), in the same transaction.
     */
    delete(projectId: string, id: string, precondition?: Precondition): Promise<EntryDeletion> {
      return transact(async (tx): Promise<EntryDeletion> => {
        const [row] = await tx
          .delete(e)
          .where(and(scoped(projectId, id), tagMatches(baseTag, precondition)))
          .returning({ shown: sql<boolean>`${e.published_at} <= now()` })
        if (row) {
          if (row.shown) await publicChanged(tx, projectId)
          return 'deleted'
        }
        // Only a conditional delete can have found the entry and left it.
        const [found] = precondition !== undefined && precondition !== '*' ? await tx.select({ id: e.id }).from(e).where(scoped(projectId, id)) : []
        return found ? 'precondition_failed' : 'not_found'
      })
    },

    /**
     * Removes one translation: not_found when the project's entry has none in that locale (or
     * there is no such entry). Like every write of a translation it holds the entry's row lock,
     * so that a conditional write of the entry waits for it and then reads the tag it left.
     */
    deleteTranslation(projectId: string, id: string, locale: string, precondition?: Precondition): Promise<EntryDeletion> {
      const key = localeKey(locale)
      return transact(async (tx): Promise<EntryDeletion> => {
        const [locked] = await tx.select({ id: e.id, shown: sql<boolean>`${e.published_at} <= now()` }).from(e).where(scoped(projectId, id)).for('update')
        if (!locked) return 'not_found'
        if (precondition !== undefined) {
          const [read] = await taggedTranslation(tx, id, key)
          if (!tagSatisfies(read!.etag, precondition)) return 'precondition_failed'
        }
        const [deleted] = await tx
          .delete(t)
          .where(and(eq(t.entry_id, id), eq(t.locale_key, key)))
          .returning({ entry_id: t.entry_id })
        if (!deleted) return 'not_found'
        // Its locale's pages and feeds show the entry in its base locale now.
        if (locked.shown) await publicChanged(tx, projectId)
        return 'deleted'
      })
    },
  }
}
