import { LIST_ORDER_COLUMN, type EntryPatch, type EntryView, type ListStatus } from '../db/repos/changelog.js'
import { scopeOfCursor } from '../domain/cursor.js'
import { isId } from '../domain/ids.js'
import { isStoredLabel, normalizeLabel, normalizeLabels } from '../domain/labels.js'
import { canonicalLocale, sameLocale } from '../domain/locale.js'
import { checkPublishingInput, decidePublishing, type PublishedAt, type PublishingDecision } from '../domain/publishing.js'
import { ifMatch, preconditionFailed } from '../http/conditional.js'
import { ApiError, invalidField, notFound } from '../http/errors.js'
import { readByKey } from '../http/guard.js'
import { preparedWrite } from '../http/idempotency.js'
import type { Handler } from '../http/types.js'
import { listScopeOf, pageOf, projectPageRequest } from './pagination.js'
import { changelogRecord } from './records.js'

/** Fired, in the transaction of the write, when a write makes an entry visible (openapi.yaml, webhooks). */
const PUBLISHED = 'changelog_entry.published'

const requireEntryId = (id: string): string => {
  if (!isId('ch', id)) throw notFound('changelog entry')
  return id
}

function labelsOrThrow(labels: string[]): string[] {
  const result = normalizeLabels(labels)
  if (!result.ok) throw invalidField('body', `/labels/${result.index}`, result.message)
  return result.labels
}

/**
 * A `label` filter as labels are stored. The schema holds it to a label's bounds as sent; one
 * that lowercasing makes longer than any stored label (`İ` becomes two characters) is no 400
 * here, unlike a label written: it simply matches nothing, and the spec stays the whole rule.
 */
export const labelQuery = (label: string | undefined): string | undefined => (label === undefined ? undefined : normalizeLabel(label))

function publishedAtOrThrow(decision: PublishingDecision) {
  if (!decision.ok) throw invalidField('body', decision.path, decision.message)
  return decision.published_at
}

const location = (id: string) => `/v1/changelog/${id}`

/** A cursor's list: the status and label. The locale does not change the order, so a cursor serves every locale. */
const changelogScope = (status: ListStatus, label: string | undefined) => `changelog:${status}:${JSON.stringify(label ?? null)}`

/** An entry's place in its list: the list's column (never null in a list that orders by it), then the id. */
const entrySortKey = (status: ListStatus) => (entry: EntryView) => ({ at: entry[LIST_ORDER_COLUMN[status]]!, id: entry.id })

/**
 * The filters a cursor was issued with (contract §8: "a cursor holds its status"), for those a
 * request with it leaves out: `?cursor=` alone goes on with the list, status and label, that gave
 * it. Filters that are sent must be the cursor's (decodeCursor compares the scope: a 400
 * otherwise). A label is taken only as the list would have stored it.
 */
function heldFilters(cursor: string | undefined): { status?: ListStatus; label?: string | null } {
  const scope = cursor === undefined ? undefined : listScopeOf(scopeOfCursor(cursor))
  const [, status, label] = /^changelog:(published|scheduled|draft|all):(.*)$/s.exec(scope ?? '') ?? []
  if (status === undefined) return {}
  let held: unknown
  try {
    held = JSON.parse(label!)
  } catch {
    return {}
  }
  if (held !== null && !(typeof held === 'string' && isStoredLabel(held))) return {}
  return { status: status as ListStatus, label: held as string | null }
}

export const listChangelogEntries = readByKey<'listChangelogEntries'>(async (request, { repos }) => {
  const { project, query } = request
  const held = heldFilters(query.cursor)
  const status = query.status ?? held.status ?? 'published'
  const label = query.label !== undefined ? labelQuery(query.label) : (held.label ?? undefined)
  const page = await projectPageRequest(query, 20, changelogScope(status, label), project, repos)
  const { entries, hasMore } = await repos.changelog.list(project, { status, label, locale: query.locale, ...page }, (bytes) => request.holdAnswer(bytes))
  return { status: 200, body: pageOf(entries, hasMore, page, page.scope, entrySortKey(status), changelogRecord) }
})

export const createChangelogEntry = preparedWrite<'createChangelogEntry', { labels: string[]; published_at: PublishedAt; body_html: string | null }>(
  // Checked, then rendered, before any transaction: a render may wait its turn for seconds.
  async ({ principal, body }, { markdown }) => ({
    labels: labelsOrThrow(body.labels ?? []),
    // Nothing exists yet to compare with, so this process's clock judges "in the future"; the
    // date written for "now" is still the database's.
    published_at: publishedAtOrThrow(decidePublishing(body, undefined, new Date())) ?? null,
    body_html: await markdown.render(body.body ?? '', principal.projectId),
  }),
  async ({ principal, body }, { repos }, { labels, published_at, body_html }) => {
    const entry = await repos.transaction(async (tx) => {
      const created = await tx.changelog.create(principal.projectId, {
        title: body.title,
        body: body.body ?? '',
        body_html,
        labels,
        version: body.version ?? null,
        locale: canonicalLocale(body.locale ?? 'en'),
        published_at,
      })
      if (created.published) await tx.outbox.record(principal.projectId, PUBLISHED, changelogRecord(created.entry))
      return created.entry
    })
    return { status: 201, body: { data: changelogRecord(entry) }, headers: { location: location(entry.id) } }
  },
)

export const getChangelogEntry = readByKey<'getChangelogEntry'>(async ({ project, params, query }, { repos }) => {
  const entry = await repos.changelog.get(project, requireEntryId(params.id), query.locale)
  if (!entry) throw notFound('changelog entry')
  return { status: 200, body: { data: changelogRecord(entry) }, headers: { etag: entry.etag } }
})

export const updateChangelogEntry: Handler<'updateChangelogEntry'> = async ({ principal, params, body, headers }, { repos, markdown }) => {
  // Everything the body alone can be refused for is refused before the entry is looked up.
  const labels = body.labels === undefined ? undefined : labelsOrThrow(body.labels)
  publishedAtOrThrow(checkPublishingInput(body, new Date()))
  const locale = body.locale === undefined ? undefined : canonicalLocale(body.locale)
  // Rendered before the entry is locked, so that no row waits on a render.
  const body_html = body.body === undefined ? undefined : await markdown.render(body.body, principal.projectId)

  const precondition = ifMatch(headers['if-match'])
  const result = await repos.transaction(async (tx) => {
    const update = await tx.changelog.update(principal.projectId, requireEntryId(params.id), locale, precondition, (current): EntryPatch => {
      const published_at = publishedAtOrThrow(decidePublishing(body, current.entry, current.now))
      const shared = {
        ...(labels !== undefined ? { labels } : {}),
        ...(body.version !== undefined ? { version: body.version } : {}),
        ...(published_at !== undefined ? { published_at } : {}),
      }
      const content = {
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.body !== undefined ? { body: body.body, body_html: body_html! } : {}),
      }
      if (locale === undefined || sameLocale(locale, current.entry.locale)) return { entry: { ...shared, ...content } }
      // A locale other than the base addresses a translation; naming one that does not exist yet
      // creates it, and a translation has no title to fall back on.
      if (!current.translation && content.title === undefined) {
        throw invalidField('body', '/title', `is required to create the ${locale} translation`)
      }
      return { entry: shared, translation: { locale, ...content } }
    })
    if (update.outcome === 'updated' && update.published) await tx.outbox.record(principal.projectId, PUBLISHED, changelogRecord(update.published))
    return update
  })
  if (result.outcome === 'not_found') throw notFound('changelog entry')
  if (result.outcome === 'precondition_failed') throw preconditionFailed()
  return { status: 200, body: { data: changelogRecord(result.entry) }, headers: { etag: result.entry.etag } }
}

export const deleteChangelogEntry: Handler<'deleteChangelogEntry'> = async ({ principal, params, query, headers }, { repos }) => {
  const id = requireEntryId(params.id)
  const precondition = ifMatch(headers['if-match'])
  if (query.locale !== undefined) {
    const result = await repos.changelog.deleteTranslation(principal.projectId, id, query.locale, precondition)
    if (result === 'not_found') throw new ApiError('not_found', `No changelog entry with that id has a ${query.locale} translation.`)
    if (result === 'precondition_failed') throw preconditionFailed()
  } else {
    const result = await repos.changelog.delete(principal.projectId, id, precondition)
    if (result === 'not_found') throw notFound('changelog entry')
    if (result === 'precondition_failed') throw preconditionFailed()
  }
  return { status: 204, body: undefined }
}
