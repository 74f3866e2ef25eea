// The changelog as feeds: Atom 1.0 (RFC 4287) and JSON Feed 1.1. Both are built from the same
// entries the page shows, with the same HTML of their bodies, rendered when they were written.
// Like the page, each is built in pieces, one per entry (see streamed() in changelog-cache.ts).
//
// Each item links to its entry's permalink page, which keeps working when the entry leaves the
// list's first page. With PUBLIC_BASE_URL set, every link is absolute on it, as feed readers
// need; without it, links are relative references, resolved against the feed's own URL (the
// Host header is the client's to choose, so it never goes into a cacheable public document).
// Ids never depend on the address: a JSON Feed item's id is the entry's id (JSON Feed takes any
// string unique in the feed and never reused), and Atom, which needs an IRI, gets a `urn:uuid:`
// name derived from the project and entry ids. Both are stable wherever the feed is served from.
import { createHash } from 'node:crypto'
import type { EntryView } from '../db/repos/changelog.js'
import { publicLink } from './links.js'
import { localeKey } from '../domain/locale.js'

/** An entry as the page and the feeds show it: the HTML of its body instead of its Markdown. */
export type ShownEntry = Omit<EntryView, 'body' | 'status'> & { body_html: string }

/** Entries a feed holds: the newest of the published set, like a first page of the list. */
export const FEED_SIZE = 50

export interface FeedSource {
  projectId: string
  projectName: string
  /** The locale asked for, if any; it selects translations and goes into the links. */
  locale: string | undefined
  /** The label the entries were filtered by (normalised), if any; it goes into the links and the feed's id. */
  label?: string | undefined
  entries: ShownEntry[]
  /**
   * The feed's last change beyond its entries' own times: the project's public_changed_at (an
   * entry deleted or taken back, the project renamed), else its creation.
   */
  projectChangedAt: Date
  /** PUBLIC_BASE_URL, if set: every link is absolute on it. */
  baseUrl: string | undefined
}

export const changelogPath = (projectId: string) => `/portal/${projectId}/changelog`
/** An entry's permalink page. */
export const entryPath = (projectId: string, entryId: string) => `${changelogPath(projectId)}/${entryId}`

/** A page or feed path with the filters a reader chose (locale, label), so that its links lead to the same selection. */
export function withFilters(path: string, filters: { locale?: string | undefined; label?: string | undefined }): string {
  const query = new URLSearchParams()
  if (filters.locale) query.set('locale', filters.locale)
  if (filters.label !== undefined) query.set('label', filters.label)
  const search = query.toString()
  return search ? `${path}?${search}` : path
}

/** When an entry last changed as a reader sees it: it cannot be older than its publication. */
export const entryUpdated = (entry: Pick<EntryView, 'published_at' | 'updated_at'>): Date =>
  entry.published_at && entry.published_at > entry.updated_at ? entry.published_at : entry.updated_at

/** The latest change among the entries and the project's (projectChangedAt): the feed's `updated` and Last-Modified. */
export function feedUpdated(source: { entries: Pick<EntryView, 'published_at' | 'updated_at'>[]; projectChangedAt: Date }): Date {
  return source.entries.reduce((latest, entry) => {
    const updated = entryUpdated(entry)
    return updated > latest ? updated : latest
  }, source.projectChangedAt)
}

/** When the project's public changelog last changed beyond its entries' times (FeedSource.projectChangedAt). */
export const projectChangedAt = (project: { created_at: Date; public_changed_at: Date | null }): Date => project.public_changed_at ?? project.created_at

// A name-based (version 5) UUID under this service's own namespace: the same name always gives
// the same id, and no two names share one.
const NAMESPACE = Buffer.from('4d0a9d1e7c3b4f5a8e2f6b1c9d0e3a7f', 'hex')
function uuidUrn(name: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(name).digest()
  hash[6] = (hash[6]! & 0x0f) | 0x50
  hash[8] = (hash[8]! & 0x3f) | 0x80
  const hex = hash.subarray(0, 16).toString('hex')
  return `urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

// XML 1.0 allows tab, newline, carriage return and the characters from U+0020 on, except lone
// surrogates and U+FFFE/U+FFFF. Titles are stored exactly as sent, so anything else in one is
// replaced rather than let it make the whole feed unreadable.
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu
const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }

/** Text for an XML text node or a quoted attribute: no CDATA, so `]]>` is just `]]&gt;`. */
export function xmlEscape(value: string): string {
  return value.replace(NOT_XML, '\uFFFD').replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!)
}

const feedTitle = (source: FeedSource) => `${source.projectName} changelog`

/** An item's link: the entry's permalink, in the feed's locale. */
const itemLink = (source: FeedSource, entry: ShownEntry) => publicLink(source.baseUrl, withFilters(entryPath(source.projectId, entry.id), { locale: source.locale }))

export function* atomFeed(source: FeedSource): Generator<string> {
  const page = changelogPath(source.projectId)
  const alternate = publicLink(source.baseUrl, withFilters(page, source))
  // A label-filtered feed is a feed of its own; without a label the id is what it always was.
  const label = source.label === undefined ? '' : `&label=${source.label}`
  const feedId = uuidUrn(`${source.projectId}/changelog?locale=${source.locale === undefined ? '' : localeKey(source.locale)}${label}`)
  yield [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `  <id>${feedId}</id>`,
    `  <title type="text">${xmlEscape(feedTitle(source))}</title>`,
    `  <updated>${feedUpdated(source).toISOString()}</updated>`,
    `  <author><name>${xmlEscape(source.projectName)}</name></author>`,
    `  <link rel="alternate" type="text/html" href="${xmlEscape(alternate)}"/>`,
    `  <link rel="self" type="application/atom+xml" href="${xmlEscape(publicLink(source.baseUrl, withFilters(`${page}.atom`, source)))}"/>`,
    '',
  ].join('\n')
  for (const entry of source.entries) {
    const lines = [
      `  <entry xml:lang="${xmlEscape(entry.locale)}">`,
      `    <id>${uuidUrn(`${source.projectId}/${entry.id}`)}</id>`,
      `    <title type="text">${xmlEscape(entry.title)}</title>`,
      ...(entry.published_at ? [`    <published>${entry.published_at.toISOString()}</published>`] : []),
      `    <updated>${entryUpdated(entry).toISOString()}</updated>`,
      `    <link rel="alternate" type="text/html" href="${xmlEscape(itemLink(source, entry))}"/>`,
      ...entry.labels.map((label) => `    <category term="${xmlEscape(label)}"/>`),
      `    <content type="html">${xmlEscape(entry.body_html)}</content>`,
      '  </entry>',
      '',
    ]
    yield lines.join('\n')
  }
  yield '</feed>\n'
}

export interface JsonFeedItem {
  id: string
  url: string
  title: string
  content_html: string
  date_published: string
  date_modified: string
  tags: string[]
  language: string
}

export interface JsonFeed {
  version: 'https://jsonfeed.org/version/1.1'
  title: string
  home_page_url: string
  feed_url: string
  authors: { name: string }[]
  items: JsonFeedItem[]
}

export function jsonFeed(source: FeedSource): JsonFeed {
  return {
    version: 'https://jsonfeed.org/version/1.1',
    title: feedTitle(source),
    home_page_url: publicLink(source.baseUrl, withFilters(changelogPath(source.projectId), source)),
    feed_url: publicLink(source.baseUrl, withFilters(`${changelogPath(source.projectId)}.json`, source)),
    authors: [{ name: source.projectName }],
    items: source.entries.map((entry) => ({
      id: entry.id,
      url: itemLink(source, entry),
      title: entry.title,
      content_html: entry.body_html,
      // Every entry in a feed is published; the list never returns one without a date.
      date_published: (entry.published_at ?? entry.created_at).toISOString(),
      date_modified: entryUpdated(entry).toISOString(),
      tags: entry.labels,
      language: entry.locale,
    })),
  }
}

/** The JSON Feed's text in pieces: everything but the items, then one item at a time. */
export function* jsonFeedText(source: FeedSource): Generator<string> {
  const { items, ...head } = jsonFeed(source)
  yield `${JSON.stringify(head).slice(0, -1)},"items":[`
  for (const [i, item] of items.entries()) yield `${i > 0 ? ',' : ''}${JSON.stringify(item)}`
  yield ']}'
}

export const ATOM_TYPE = 'application/atom+xml; charset=utf-8'
export const JSON_FEED_TYPE = 'application/feed+json; charset=utf-8'
