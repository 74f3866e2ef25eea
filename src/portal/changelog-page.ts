// The public changelog page: the same entries as GET /v1/changelog, as plain HTML a person can
// read on a phone, with no script. Every value goes through the `html` tag of ./html.ts, which
// escapes it; the one piece inserted as markup is the Markdown body, rendered without raw HTML.
import type { EntryView } from '../db/repos/changelog.js'
import { changelogPath } from './feeds.js'
import { html, htmlDocument, page, SafeHtml } from './html.js'
import { renderMarkdown } from './markdown.js'

export const DEFAULT_LIMIT = 20

export interface ChangelogPageSource {
  projectId: string
  projectName: string
  locale: string | undefined
  limit: number
  offset: number
  entries: EntryView[]
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

/** A page link that keeps the visitor's locale and page size; defaults are left out of the URL. */
function pageHref(source: ChangelogPageSource, offset: number): string {
  const query = new URLSearchParams()
  if (source.locale) query.set('locale', source.locale)
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

function entryHtml(entry: EntryView): SafeHtml {
  const published = entry.published_at!
  return html`<article id="${entry.id}" lang="${entry.locale}">
<h2>${entry.title}</h2>
<p class="meta"><time datetime="${published.toISOString()}">${formatDate(published, entry.locale)}</time> · <span lang="en">Version</span> ${entry.version}${
    entry.labels.length ? html` · ${entry.labels.map((label) => html`<span class="label">${label}</span>`)}` : ''
  }</p>
<div class="body">
${new SafeHtml(renderMarkdown(entry.body))}</div>
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

export function changelogPage(source: ChangelogPageSource): string {
  const title = `${source.projectName} changelog`
  const feedQuery = source.locale ? `?locale=${encodeURIComponent(source.locale)}` : ''
  const atom = `${changelogPath(source.projectId)}.atom${feedQuery}`
  const json = `${changelogPath(source.projectId)}.json${feedQuery}`
  const empty =
    source.offset > 0
      ? html`<p>No entries on this page. <a href="${pageHref(source, 0)}">See the newest entries</a>.</p>`
      : html`<p>No entries yet.</p>`
  const feeds = html`<link rel="alternate" type="application/atom+xml" title="${title} (Atom)" href="${atom}">
<link rel="alternate" type="application/feed+json" title="${title} (JSON Feed)" href="${json}">
`
  return htmlDocument(
    title,
    html`<header>
<h1>${title}</h1>
<p class="meta">Subscribe: <a href="${atom}" type="application/atom+xml">Atom feed</a> · <a href="${json}" type="application/feed+json">JSON Feed</a></p>
</header>
<main>
${source.entries.length ? source.entries.map(entryHtml) : empty}
</main>
${pagination(source)}`,
    { head: feeds, style: STYLE, indexable: true },
  )
}

/** The 404 page: says only that there is no changelog at this address. */
export function changelogNotFoundPage(): string {
  return page('Changelog not found', html`<h1>Changelog not found</h1>
<p>There is no changelog at this address. Check the link you followed.</p>`)
}
