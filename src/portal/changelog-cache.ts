// Conditional GETs for the public changelog page and feeds. Feed readers poll: most polls
// should cost one query and an empty 304. So the ETag is computed from the page's state
// (repos.changelog.portalState: the project's name, and which entries are shown and when each
// and its translation last changed), never from the body: a 304 builds nothing and reads no
// body. Anything shown that can change must therefore be in that state (the tests in
// test/portal/changelog-cache.test.ts change each in turn). Last-Modified (feeds only) is the
// latest change among the entries shown and of the project's public_changed_at, which a write
// that takes an entry out of a page or feed moves (feeds.ts, feedUpdated); an HTTP date has
// whole seconds, which is one reason If-None-Match wins when both are sent (RFC 9110 §13.2.2).
// It is sent, and If-Modified-Since honoured, only once that change has settled (SETTLED_MS).
import type { IncomingHttpHeaders } from 'node:http'
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { PortalState } from '../db/repos/changelog.js'
import { entityTag, noneMatch } from '../http/conditional.js'

/** Shared caches may keep a copy for a minute: a scheduled entry shows up at most that late. */
export const PUBLIC_CACHE_CONTROL = 'public, max-age=60'

/**
 * Changes the ETags of every page and feed: bump it with any change to what they show for the
 * same entries (their markup, a field added), since the state they are computed from is the same.
 */
// 3: a version is shown only where one was given (migration 0006 unset the stored defaults).
// 4: entries link to their permalinks; <html lang>; absolute links on PUBLIC_BASE_URL.
const REPRESENTATION = 4

/**
 * The entity tag of one page or feed: its format, the request's parameters and the state shown.
 * The label is there even though the state already depends on it: a filtered page whose entries
 * happen to be the unfiltered page's still differs from it (its links keep the label).
 */
export function changelogETag(
  contentType: string,
  request: { locale?: string; label?: string; limit?: number; offset?: number; entry?: string },
  state: PortalState,
  /** PUBLIC_BASE_URL: the links are built on it, so a deployment that changes it changes every tag. */
  publicBaseUrl: string | undefined,
): string {
  return entityTag(
    JSON.stringify([
      REPRESENTATION,
      contentType,
      publicBaseUrl ?? null,
      request.locale ?? null,
      request.limit ?? null,
      request.offset ?? null,
      ...(request.label !== undefined ? [{ label: request.label }] : []),
      // An entry's permalink page, which shows only that entry.
      ...(request.entry !== undefined ? [{ entry: request.entry }] : []),
      state.project.name,
      state.project.created_at,
      state.hasMore,
      state.entries.map((e) => [e.id, e.published_at, e.updated_at, e.translation_updated_at, e.html_bytes]),
    ]),
  )
}

/**
 * How old the latest change must be before Last-Modified is sent and If-Modified-Since answered
 * by it. An HTTP date has whole seconds: a change made later in the second a copy was sent
 * bears the same date, and that copy was answered 304 (found by a review; RFC 9110 §8.8.2.2
 * holds such a date weak until a second has passed). And a write is dated when its transaction
 * begins but seen when it commits, which may be seconds later (each statement may take up to
 * DB_STATEMENT_TIMEOUT_MS): a date read meanwhile could come before a change not yet seen. A
 * minute is longer than a write runs at the default timeout, and is what shared caches may keep
 * a copy anyway (PUBLIC_CACHE_CONTROL). Until then a reader revalidates by ETag, or reads again.
 * The dates are the database's and `now` the server's: the two clocks are taken to agree within
 * seconds (NTP), and a DB_STATEMENT_TIMEOUT_MS raised toward minutes narrows the margin.
 */
export const SETTLED_MS = 60_000

export interface Representation<B> {
  etag: string
  contentType: string
  /** The latest change among the entries shown; undefined sends no Last-Modified. */
  lastModified?: Date
  /** Extra headers for the 200 and the 304 alike (a page's security headers). */
  headers?: Record<string, string>
  /** Builds what is sent; called only for a 200. */
  body: () => Promise<B>
}

export type ConditionalReply<B> =
  | { status: 200; body: B; headers: Record<string, string> }
  | { status: 304; body: undefined; headers: Record<string, string> }

/** Whole seconds, the precision of an HTTP date. */
const seconds = (date: Date) => Math.floor(date.getTime() / 1000)

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const MONTH = MONTHS.join('|')
/** RFC 9110 §5.6.7's three forms: IMF-fixdate, then the obsolete RFC 850 and asctime forms, which a recipient must accept too. */
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTH}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`)
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MONTH})-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`)
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTH}) ([ \\d]\\d) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`)

/** An HTTP-date's year, month name, day, hour, minute and second, as its form writes them. */
type DateFields = [year: number, month: string, day: string, hour: string, minute: string, second: string]

function imfFields(value: string): DateFields | undefined {
  const m = IMF_FIXDATE.exec(value)
  return m ? [Number(m[3]), m[2]!, m[1]!, m[4]!, m[5]!, m[6]!] : undefined
}

function rfc850Fields(value: string, now: Date): DateFields | undefined {
  const m = RFC850_DATE.exec(value)
  if (!m) return undefined
  const thisYear = now.getUTCFullYear()
  const year = thisYear - (thisYear % 100) + Number(m[3])
  return [year > thisYear + 50 ? year - 100 : year, m[2]!, m[1]!, m[4]!, m[5]!, m[6]!]
}

function asctimeFields(value: string): DateFields | undefined {
  const m = ASCTIME_DATE.exec(value)
  return m ? [Number(m[6]), m[1]!, m[2]!.trim(), m[3]!, m[4]!, m[5]!] : undefined
}

/**
 * An HTTP-date's milliseconds, or undefined for anything else (`Date.parse` took `9999` and
 * `foo 2099` for dates). An RFC 850 date's two-digit year is the latest year with those digits
 * that is not more than 50 years ahead (RFC 9110 §5.6.7). A day, hour, minute or second out of
 * range is no date.
 */
export function httpDate(value: string, now = new Date()): number | undefined {
  const fields = imfFields(value) ?? rfc850Fields(value, now) ?? asctimeFields(value)
  if (!fields) return undefined
  const [year, month, day, hour, minute, second] = fields
  const date = new Date(Date.UTC(year, MONTHS.indexOf(month), Number(day), Number(hour), Number(minute), Number(second)))
  date.setUTCFullYear(year) // Date.UTC reads years 0 to 99 as 1900 to 1999
  const asGiven = date.getUTCDate() === Number(day) && date.getUTCHours() === Number(hour) && date.getUTCMinutes() === Number(minute) && date.getUTCSeconds() === Number(second)
  return asGiven ? date.getTime() : undefined
}

function notModifiedSince(header: string, lastModified: Date): boolean {
  const since = httpDate(header)
  // A value that is not an HTTP-date is ignored, as RFC 9110 §13.1.3 asks.
  return since !== undefined && seconds(lastModified) <= Math.floor(since / 1000)
}

/**
 * A 200 with validators and cache headers, or an empty 304 when the client's copy is current.
 * `now`: the server's clock, which says whether the last change has settled (SETTLED_MS).
 */
export async function conditionalReply<B>(requestHeaders: IncomingHttpHeaders, rep: Representation<B>, now: number): Promise<ConditionalReply<B>> {
  const lastModified = rep.lastModified && now - rep.lastModified.getTime() >= SETTLED_MS ? rep.lastModified : undefined
  const headers: Record<string, string> = {
    etag: rep.etag,
    'cache-control': PUBLIC_CACHE_CONTROL,
    ...(lastModified ? { 'last-modified': lastModified.toUTCString() } : {}),
    ...rep.headers,
  }
  const inm = requestHeaders['if-none-match']
  const ims = requestHeaders['if-modified-since']
  const current = inm !== undefined ? noneMatch(inm, rep.etag) : ims !== undefined && lastModified !== undefined && notModifiedSince(ims, lastModified)
  if (current) return { status: 304, body: undefined, headers }
  return { status: 200, body: await rep.body(), headers: { ...headers, 'content-type': rep.contentType } }
}

/**
 * A body sent a piece at a time, with a turn of the event loop after each: a page of a hundred
 * entries of a megabyte of HTML each is never joined, escaped or encoded in one go, so other
 * requests are served between its pieces.
 */
export function streamed(pieces: Iterable<string>): Readable {
  return Readable.from(
    (async function* () {
      for (const piece of pieces) {
        yield piece
        await nextTurn()
      }
    })(),
    { objectMode: false },
  )
}
