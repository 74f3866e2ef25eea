// The public changelog page: the same entries as GET /v1/changelog, as plain HTML a person can
// read on a phone, with no script. Every value goes through the `html` tag of ./html.ts, which
// escapes it; the one piece inserted as markup is the body's HTML, rendered from its Markdown
// without raw HTML when the entry was written (markdown.ts).
import { randomUUID } from 'node:crypto'
import { changelogPath, withFilters, type ShownEntry } from './feeds.js'
import { html, htmlDocument, page, SafeHtml } from './html.js'

export const DEFAULT_LIMIT = 20

export interface ChangelogPageSource {
  projectId: string
  projectName: string
  locale: string | undefined
  /** The label the entries were filtered by (normalised), if any. */
  label?: string | undefined
  limit: number
  offset: number
  entries: ShownEntry[]
  hasMore: boolean
}

const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 42rem; margin: 0 auto; padding: 1rem; }
  h1 { font-size: 1.6rem; margin: 0.5rem 0; }
  h2 { font-size: 1.25rem; margin: 0 0 0.25rem; }
  article { padding: 1.25rem 0; border-top: 1px solid color-mix(in srgb, currentColor 25%, transparent); }
  .meta { margin: 0 0 0.75rem; opacity: 0.8; font-size: 0.95rem; }
  .label { display: inline-block; padding: 0 0.5rem; margin-right: 0.25rem; border: 1px solid currentColor; border-radius: 1rem; font-size: 0.85rem; }
  .body img { max-width: 100%; height: auto; }
  .body pre { overflow-x: auto; }
  nav.pages { display: flex; justify-content: space-between; gap: 1rem; padding: 1rem 0; }
  a { color: LinkText; }
`

/** A page link that keeps the visitor's locale, label and page size; defaults are left out of the URL. */
function pageHref(source: ChangelogPageSource, offset: number): string {
  const query = new URLSearchParams()
  if (source.locale) query.set('locale', source.locale)
  if (source.label !== undefined) query.set('label', source.label)
  if (source.limit !== DEFAULT_LIMIT) query.set('limit', String(source.limit))
  if (offset > 0) query.set('offset', String(offset))
  const search = query.toString()
  return `${changelogPath(source.projectId)}${search ? `?${search}` : ''}`
}

function formatDate(date: Date, locale: string): string {
  const options: Intl.DateTimeFormatOptions = { dateStyle: 'long', timeZone: 'UTC' }
  try {
    return new Intl.DateTimeFormat(locale, options).format(date)
  } catch {
    // A well-formed tag the runtime does not know still gets a readable date.
    return new Intl.DateTimeFormat('en', options).format(date)
  }
}

function entryHtml(entry: ShownEntry): SafeHtml {
  const published = entry.published_at!
  return html`<article id="${entry.id}" lang="${entry.locale}">
<h2>${entry.title}</h2>
<p class="meta"><time datetime="${published.toISOString()}">${formatDate(published, entry.locale)}</time>${
    // Only a version the team gave: the API's default (1.0.0) says nothing about the entry.
    entry.version === null ? '' : html` · <span lang="en">Version</span> ${entry.version}`
  }${
    entry.labels.length ? html` · ${entry.labels.map((label) => html`<span class="label">${label}</span>`)}` : ''
  }</p>
<div class="body">
${new SafeHtml(entry.body_html)}</div>
</article>
`
}

function pagination(source: ChangelogPageSource): SafeHtml | '' {
  const newer = source.offset > 0 ? Math.max(0, source.offset - source.limit) : undefined
  const older = source.hasMore ? source.offset + source.limit : undefined
  if (newer === undefined && older === undefined) return ''
  return html`<nav class="pages" aria-label="Pages">
${newer !== undefined ? html`<a href="${pageHref(source, newer)}" rel="prev">← Newer entries</a>` : html`<span></span>`}
${older !== undefined ? html`<a href="${pageHref(source, older)}" rel="next">Older entries →</a>` : ''}
</nav>
`
}

/** Marks where the entries go in the page's frame; random, so that no escaped value can contain it. */
const ENTRIES = `<!-- entries ${randomUUID()} -->`

/**
 * The page in pieces: the frame around the entries, then one piece per entry, so that a page of
 * a hundred large entries is never built (or written) in one go (see streamed() in
 * changelog-cache.ts).
 */
export function* changelogPage(source: ChangelogPageSource): Generator<string> {
  const title = `${source.projectName} changelog`
  const atom = withFilters(`${changelogPath(source.projectId)}.atom`, source)
  const json = withFilters(`${changelogPath(source.projectId)}.json`, source)
  const empty =
    source.offset > 0
      ? html`<p>No entries on this page. <a href="${pageHref(source, 0)}">See the newest entries</a>.</p>`
      : source.label !== undefined
        ? html`<p>No entries with this label yet.</p>`
        : html`<p>No entries yet.</p>`
  // The one label the page is filtered by, with the way back to every entry.
  const filter =
    source.label !== undefined
      ? html`<p class="meta">Entries labelled <span class="label">${source.label}</span> · <a href="${withFilters(changelogPath(source.projectId), { locale: source.locale })}">All entries</a></p>
`
      : ''
  const feeds = html`<link rel="alternate" type="application/atom+xml" title="${title} (Atom)" href="${atom}">
<link rel="alternate" type="application/feed+json" title="${title} (JSON Feed)" href="${json}">
`
  const frame = htmlDocument(
    title,
    html`<header>
<h1>${title}</h1>
<p class="meta">Subscribe: <a href="${atom}" type="application/atom+xml">Atom feed</a> · <a href="${json}" type="application/feed+json">JSON Feed</a></p>
${filter}</header>
<main>
${source.entries.length ? new SafeHtml(ENTRIES) : empty}
</main>
${pagination(source)}`,
    { head: feeds, style: STYLE, indexable: true },
  )
  const at = frame.indexOf(ENTRIES)
  if (at < 0) return yield frame
  yield frame.slice(0, at)
  for (const entry of source.entries) yield entryHtml(entry).value
  yield frame.slice(at + ENTRIES.length)
}

/** The 404 page: says only that there is no changelog at this address. */
export function changelogNotFoundPage(): string {
  return page('Changelog not found', html`<h1>Changelog not found</h1>
<p>There is no changelog at this address. Check the link you followed.</p>`)
}
