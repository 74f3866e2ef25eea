// The public changelog: an HTML page, a permalink page per published entry, and two feeds per
// project, without an API key. They read
// the published set with the same conditions as GET /v1/changelog, so "published" has one
// meaning: published_at at or before the database's now().
//
// A request costs one statement (the page's state: changelog-cache.ts) and, unless it ends in a
// 304, the shown entries with their stored HTML, in batches. Nothing renders Markdown here: the
// HTML was rendered when each body was written.
import type { Socket } from 'node:net'
import type { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { PortalEntry, PortalState } from '../db/repos/changelog.js'
import { isId } from '../domain/ids.js'
import { canonicalLocale } from '../domain/locale.js'
import { holdIfLarge, releaseOnClose } from '../http/body-budget.js'
import { ApiError } from '../http/errors.js'
import { clientAddress } from '../http/rate-limit.js'
import type { AppContext, Handler } from '../http/types.js'
import { changelogETag, conditionalReply, streamed } from '../portal/changelog-cache.js'
import { changelogEntryNotFoundPage, changelogEntryPage, changelogNotFoundPage, changelogPage, DEFAULT_LIMIT } from '../portal/changelog-page.js'
import { atomFeed, ATOM_TYPE, FEED_SIZE, feedUpdated, jsonFeedText, JSON_FEED_TYPE, projectChangedAt, type FeedSource, type ShownEntry } from '../portal/feeds.js'
import { HTML_TYPE, pageSecurityHeaders } from '../portal/html.js'
import { MAX_HTML_LENGTH, plainTextHtml } from '../portal/markdown.js'
import { labelQuery } from './changelog.js'

// Feed readers and scripts get a problem, like every other API 404; a person gets a page.
const noFeed = () => new ApiError('not_found', 'No changelog here: the project does not exist.')

/**
 * HTML read per statement. Stored HTML can reach a megabyte an entry (MAX_HTML_LENGTH), and
 * the embedded database returns a statement's rows in one go on the event loop: a large entry is
 * read alone, ordinary ones many to a statement, with a turn of the event loop between
 * statements. At 2 MB a statement, with no turn between, a page of fifty entries of a megabyte of
 * HTML each held other requests for 115 to 180 ms (found by an outside review; contract §11
 * allows 100); one entry of a megabyte takes about 40 ms.
 */
const BATCH_BYTES = 500_000

/** The state's ids in batches of at most BATCH_BYTES of HTML (an entry without HTML yet: alone). */
function batches(state: PortalState): string[][] {
  const out: string[][] = []
  let bytes = Infinity
  for (const entry of state.entries) {
    const size = entry.html_bytes ?? BATCH_BYTES
    if (bytes + size > BATCH_BYTES) out.push([]), (bytes = 0)
    out.at(-1)!.push(entry.id)
    bytes += size
  }
  return out
}

/** The shown entries with their HTML; a row still waiting for its HTML shows its text. */
async function shownEntries(ctx: AppContext, state: PortalState, locale: string | undefined): Promise<ShownEntry[]> {
  const shown: ShownEntry[] = []
  for (const [index, ids] of batches(state).entries()) {
    // A statement's promise settles in a microtask: without a turn, the next would follow at once.
    if (index > 0) await nextTurn()
    const rows: PortalEntry[] = await ctx.repos.changelog.portalEntries(state.project.id, ids, locale)
    for (const { body_html, body_without_html, ...entry } of rows) shown.push({ ...entry, body_html: body_html ?? plainTextHtml(body_without_html ?? '') })
  }
  return shown
}

/** A body's stream, for pieces that make one. */
type Sent<P> = P extends undefined ? undefined : Readable

/** Whom a page goes to: its connection, and the client (by address, as the portal's rate limit counts) whose share of the budget it takes. */
type SentTo = { socket: Socket; ip: string }

/**
 * The stream of what `render` makes of the shown entries (undefined when it makes nothing). When
 * their HTML is large enough to count, its bytes are held in the instance's budget
 * (http/body-budget.ts) from before they are read until the stream closes or its connection
 * does (a 503 when they do not fit), and the stream is one the send watch keeps moving
 * (http/send-rate.ts).
 */
async function sentWithin<P extends Iterable<string> | undefined>(
  ctx: AppContext,
  to: SentTo,
  state: PortalState,
  locale: string | undefined,
  render: (entries: ShownEntry[]) => P,
): Promise<Sent<P>> {
  const hold = holdIfLarge(
    ctx.bodyBudgets.portal,
    state.entries.reduce((bytes, entry) => bytes + (entry.html_bytes ?? MAX_HTML_LENGTH), 0),
    clientAddress(to),
  )
  try {
    const pieces = render(await shownEntries(ctx, state, locale))
    if (!pieces || !hold) {
      hold?.release()
      return (pieces && streamed(pieces)) as Sent<P>
    }
    const stream = ctx.sendWatch.stream(pieces, to.socket)
    releaseOnClose(hold.release, stream, to.socket)
    return stream as Sent<P>
  } catch (error) {
    hold?.release()
    throw error
  }
}

/**
 * The locale a visitor asked for, in its conventional case (`?locale=DE` is `de`): the pages'
 * and feeds' links, canonical URL and tags then name one URL for one selection.
 */
const askedLocale = (query: { locale?: string }) => (query.locale === undefined ? undefined : canonicalLocale(query.locale))

/** The page's state; undefined for any unknown project or an id of another shape. */
function portalState(ctx: AppContext, projectId: string, options: { locale?: string; label?: string; limit: number; offset: number }) {
  return isId('prj', projectId) ? ctx.repos.changelog.portalState(projectId, options) : Promise.resolve(undefined)
}

export const getPortalChangelogPage: Handler<'getPortalChangelogPage'> = async ({ params, query, headers, socket, ip }, ctx) => {
  const limit = query.limit ?? DEFAULT_LIMIT
  const offset = query.offset ?? 0
  const label = labelQuery(query.label)
  const locale = askedLocale(query)
  const state = await portalState(ctx, params.project_id, { locale, label, limit, offset })
  if (!state) return { status: 404, body: changelogNotFoundPage(), headers: { 'content-type': HTML_TYPE, ...pageSecurityHeaders() } }
  return conditionalReply(headers, {
    etag: changelogETag(HTML_TYPE, { locale, label, limit, offset }, state, ctx.config.publicBaseUrl),
    contentType: HTML_TYPE,
    headers: pageSecurityHeaders({ images: true }),
    body: () =>
      sentWithin(ctx, { socket, ip }, state, locale, (entries) => {
        const { project, hasMore } = state
        return changelogPage({ projectId: project.id, projectName: project.name, locale, label, limit, offset, entries, hasMore, baseUrl: ctx.config.publicBaseUrl })
      }),
  }, ctx.now())
}

const entryNotFound = () => ({ status: 404 as const, body: changelogEntryNotFoundPage(), headers: { 'content-type': HTML_TYPE, ...pageSecurityHeaders() } })

/**
 * One published entry's page. Like the list, a request costs one statement (the entry's state,
 * by primary key) when it ends in a 304, and reads the stored HTML only for a 200. Drafts,
 * scheduled and deleted entries, and other projects' entries, are the same 404 as unknown ids.
 */
export const getPortalChangelogEntryPage: Handler<'getPortalChangelogEntryPage'> = async ({ params, query, headers, socket, ip }, ctx) => {
  const { project_id: projectId, entry_id: entryId } = params
  const locale = askedLocale(query)
  const found = isId('prj', projectId) && isId('ch', entryId) ? await ctx.repos.changelog.portalEntryState(projectId, entryId, locale) : undefined
  if (!found) return entryNotFound()
  const state: PortalState = { project: found.project, entries: [found.entry], hasMore: false }
  const { project } = state
  const reply = await conditionalReply(headers, {
    etag: changelogETag(HTML_TYPE, { locale, entry: entryId }, state, ctx.config.publicBaseUrl),
    contentType: HTML_TYPE,
    headers: pageSecurityHeaders({ images: true }),
    body: () =>
      sentWithin(ctx, { socket, ip }, state, locale, ([entry]) =>
        entry ? changelogEntryPage({ projectId: project.id, projectName: project.name, locale, entry, baseUrl: ctx.config.publicBaseUrl }) : undefined,
      ),
  }, ctx.now())
  if (reply.status === 304) return reply
  // Deleted between the two statements.
  if (!reply.body) return entryNotFound()
  return { ...reply, body: reply.body }
}

async function feedReply(
  ctx: AppContext,
  to: SentTo,
  projectId: string,
  query: { locale?: string; label?: string },
  requestHeaders: Parameters<typeof conditionalReply>[0],
  contentType: string,
  build: (source: FeedSource) => Iterable<string>,
) {
  const locale = askedLocale(query)
  const label = labelQuery(query.label)
  const state = await portalState(ctx, projectId, { locale, label, limit: FEED_SIZE, offset: 0 })
  if (!state) throw noFeed()
  const { project } = state
  const changedAt = projectChangedAt(project)
  return conditionalReply(requestHeaders, {
    etag: changelogETag(contentType, { locale, label }, state, ctx.config.publicBaseUrl),
    contentType,
    lastModified: feedUpdated({ entries: state.entries, projectChangedAt: changedAt }),
    body: () =>
      sentWithin(ctx, to, state, locale, (entries) =>
        build({ projectId: project.id, projectName: project.name, locale, label, entries, projectChangedAt: changedAt, baseUrl: ctx.config.publicBaseUrl }),
      ),
  }, ctx.now())
}

export const getPortalChangelogAtom: Handler<'getPortalChangelogAtom'> = async ({ params, query, headers, socket, ip }, ctx) =>
  feedReply(ctx, { socket, ip }, params.project_id, query, headers, ATOM_TYPE, atomFeed)

export const getPortalChangelogJsonFeed: Handler<'getPortalChangelogJsonFeed'> = async ({ params, query, headers, socket, ip }, ctx) =>
  feedReply(ctx, { socket, ip }, params.project_id, query, headers, JSON_FEED_TYPE, jsonFeedText)
