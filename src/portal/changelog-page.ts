// The public changelog: the list page (the same entries as GET /v1/changelog) and each
// published entry's permalink page, as plain HTML a person can read on a phone, with no script.
// Every value goes through the `html` tag of ./html.ts, which escapes it; the one piece inserted
// as markup is the body's HTML, rendered from its Markdown without raw HTML when the entry was
// written (markdown.ts). Links are built on PUBLIC_BASE_URL when it is set (./links.ts), and
// then the pages name their canonical address.
import { randomUUID } from 'node:crypto'
import { changelogPath, entryPath, withFilters, type ShownEntry } from './feeds.js'
import { html, htmlDocument, LINK_COLOURS, page, SafeHtml } from './html.js'
import { publicLink } from './links.js'
import { sameLocale } from '../domain/locale.js'

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
  /** PUBLIC_BASE_URL, if set: links are absolute on it, and the page names its canonical URL. */
  baseUrl: string | undefined
}

export interface EntryPageSource {
  projectId: string
  projectName: string
  /** The locale asked for, if any (the entry says which it is shown in). */
  locale: string | undefined
  entry: ShownEntry
  baseUrl: string | undefined
}

// Readable from 320 CSS pixels up (WCAG 1.4.10): long words, URLs, code blocks and tables in a
// body wrap to fit instead of widening the page. They do not scroll within a box of their own:
// a scrolling box with nothing in it to focus is out of reach of the keyboard (axe-core's
// scrollable-region-focusable), and the stored HTML has no tabindex to give it.
const STYLE = `
  :root { color-scheme: light dark; background: Canvas; color: CanvasText; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 42rem; margin: 0 auto; padding: 1rem; overflow-wrap: anywhere; }
  h1 { font-size: 1.6rem; margin: 0.5rem 0; }
  h2 { font-size: 1.25rem; margin: 0 0 0.25rem; }
  article { padding: 1.25rem 0; border-top: 1px solid color-mix(in srgb, currentColor 25%, transparent); }
  .meta { margin: 0 0 0.75rem; font-size: 0.95rem; }
  .label { display: inline-block; padding: 0 0.5rem; margin-right: 0.25rem; border: 1px solid currentColor; border-radius: 1rem; font-size: 0.85rem; }
  .body img { max-width: 100%; height: auto; }
  .body pre { white-space: pre-wrap; }
  .body table { width: 100%; table-layout: fixed; border-collapse: collapse; }
  .body th, .body td { padding: 0.25rem; text-align: start; vertical-align: top; border: 1px solid color-mix(in srgb, currentColor 25%, transparent); }
  nav.pages { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 1rem; padding: 1rem 0; }
${LINK_COLOURS}`

/** A page link that keeps the visitor's locale, label and page size; defaults are left out of the URL. */
function pageHref(source: ChangelogPageSource, offset: number): string {
  const query = new URLSearchParams()
  if (source.locale) query.set('locale', source.locale)
  if (source.label !== undefined) query.set('label', source.label)
  if (source.limit !== DEFAULT_LIMIT) query.set('limit', String(source.limit))
  if (offset > 0) query.set('offset', String(offset))
  const search = query.toString()
  return publicLink(source.baseUrl, `${changelogPath(source.projectId)}${search ? `?${search}` : ''}`)
}

/** A tag as a language of <html lang>: in canonical case where the runtime knows it. */
function languageTag(tag: string): string {
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? tag
  } catch {
    return tag
  }
}

/**
 * The list's language: the language (primary subtag) most of its entries are in, written as
 * they write it when they agree (`pt-BR`), else bare (`fr` for `fr` and `fr-CA`); of languages
 * tied, the one asked for, else English (the page's own words), else the newest entry's. Without
 * entries, the one asked for, else English. Each entry carries its own `lang` besides.
 */
function listLanguage(source: ChangelogPageSource): string {
  const asked = source.locale ? languageTag(source.locale) : undefined
  if (source.entries.length === 0) return asked ?? 'en'
  const byLanguage = new Map<string, string[]>()
  for (const { locale } of source.entries) {
    const language = locale.split('-')[0]!.toLowerCase()
    byLanguage.set(language, [...(byLanguage.get(language) ?? []), locale])
  }
  const most = Math.max(...[...byLanguage.values()].map((locales) => locales.length))
  const tied = [...byLanguage.keys()].filter((language) => byLanguage.get(language)!.length === most)
  const preferred = [asked?.split('-')[0]!.toLowerCase(), 'en'].find((language) => language !== undefined && tied.includes(language))
  const language = preferred ?? tied[0]!
  const tags = new Set(byLanguage.get(language)!.map((locale) => locale.toLowerCase()))
  return tags.size === 1 ? byLanguage.get(language)![0]! : language
}

/** The page's own words are English: marked so wherever the page's language is another. */
const english = (lang: string) => (lang.toLowerCase() === 'en' || lang.toLowerCase().startsWith('en-') ? '' : html` lang="en"`)

/** The feeds' links in a page's head, and the canonical URL when the public address is known. */
function headLinks(title: string, feeds: { atom: string; json: string }, canonical: string | undefined): SafeHtml {
  return html`${canonical ? html`<link rel="canonical" href="${canonical}">
` : ''}<link rel="alternate" type="application/atom+xml" title="${title} (Atom)" href="${feeds.atom}">
<link rel="alternate" type="application/feed+json" title="${title} (JSON Feed)" href="${feeds.json}">
`
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

/** An entry's date, version and labels. */
function entryMeta(entry: ShownEntry): SafeHtml {
  const published = entry.published_at!
  return html`<p class="meta"><time datetime="${published.toISOString()}">${formatDate(published, entry.locale)}</time>${
    // Only a version the team gave: the API's default (1.0.0) says nothing about the entry.
    entry.version === null ? '' : html` · <span lang="en">Version</span> ${entry.version}`
  }${
    entry.labels.length ? html` · ${entry.labels.map((label) => html`<span class="label">${label}</span>`)}` : ''
  }</p>`
}

/** An entry's permalink, in the locale the visitor asked for. */
const entryHref = (baseUrl: string | undefined, projectId: string, entryId: string, locale: string | undefined) =>
  publicLink(baseUrl, withFilters(entryPath(projectId, entryId), { locale }))

function entryHtml(source: ChangelogPageSource, entry: ShownEntry): SafeHtml {
  return html`<article id="${entry.id}" lang="${entry.locale}">
<h2><a href="${entryHref(source.baseUrl, source.projectId, entry.id, source.locale)}">${entry.title}</a></h2>
${entryMeta(entry)}
<div class="body">
${new SafeHtml(entry.body_html)}</div>
</article>
`
}

function pagination(source: ChangelogPageSource, en: SafeHtml | ''): SafeHtml | '' {
  const newer = source.offset > 0 ? Math.max(0, source.offset - source.limit) : undefined
  const older = source.hasMore ? source.offset + source.limit : undefined
  if (newer === undefined && older === undefined) return ''
  return html`<nav class="pages" aria-label="Pages"${en}>
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
  const lang = listLanguage(source)
  const en = english(lang)
  const feeds = {
    atom: publicLink(source.baseUrl, withFilters(`${changelogPath(source.projectId)}.atom`, source)),
    json: publicLink(source.baseUrl, withFilters(`${changelogPath(source.projectId)}.json`, source)),
  }
  const empty =
    source.offset > 0
      ? html`<p${en}>No entries on this page. <a href="${pageHref(source, 0)}">See the newest entries</a>.</p>`
      : source.label !== undefined
        ? html`<p${en}>No entries with this label yet.</p>`
        : html`<p${en}>No entries yet.</p>`
  // The one label the page is filtered by, with the way back to every entry.
  const filter =
    source.label !== undefined
      ? html`<p class="meta">Entries labelled <span class="label">${source.label}</span> · <a href="${publicLink(source.baseUrl, withFilters(changelogPath(source.projectId), { locale: source.locale }))}">All entries</a></p>
`
      : ''
  const frame = htmlDocument(
    title,
    html`<header${en}>
<h1>${title}</h1>
<p class="meta">Subscribe: <a href="${feeds.atom}" type="application/atom+xml">Atom feed</a> · <a href="${feeds.json}" type="application/feed+json">JSON Feed</a></p>
${filter}</header>
<main>
${source.entries.length ? new SafeHtml(ENTRIES) : empty}
${pagination(source, en)}</main>`,
    { head: headLinks(title, feeds, source.baseUrl === undefined ? undefined : pageHref(source, source.offset)), style: STYLE, indexable: true, lang },
  )
  const at = frame.indexOf(ENTRIES)
  if (at < 0) return yield frame
  yield frame.slice(0, at)
  for (const entry of source.entries) yield entryHtml(source, entry).value
  yield frame.slice(at + ENTRIES.length)
}

/**
 * An entry's own page: the permalink that feeds and the list link to, so a link keeps working
 * when the entry leaves the list's first page. In the entry's language; canonical in the locale
 * it is shown in (a locale asked for that has no translation shows, and names, the base).
 */
export function* changelogEntryPage(source: EntryPageSource): Generator<string> {
  const { entry } = source
  const listTitle = `${source.projectName} changelog`
  const en = english(entry.locale)
  const list = publicLink(source.baseUrl, withFilters(changelogPath(source.projectId), { locale: source.locale }))
  const feeds = {
    atom: publicLink(source.baseUrl, withFilters(`${changelogPath(source.projectId)}.atom`, { locale: source.locale })),
    json: publicLink(source.baseUrl, withFilters(`${changelogPath(source.projectId)}.json`, { locale: source.locale })),
  }
  const translated = source.locale !== undefined && sameLocale(entry.locale, source.locale)
  const canonical = source.baseUrl === undefined ? undefined : entryHref(source.baseUrl, source.projectId, entry.id, translated ? entry.locale : undefined)
  const frame = htmlDocument(
    `${entry.title} · ${listTitle}`,
    html`<header${en}>
<p><a href="${list}">${listTitle}</a></p>
</header>
<main>
<article id="${entry.id}">
<h1>${entry.title}</h1>
${entryMeta(entry)}
<div class="body">
${new SafeHtml(ENTRIES)}</div>
</article>
</main>`,
    { head: headLinks(listTitle, feeds, canonical), style: STYLE, indexable: true, lang: entry.locale },
  )
  // The body, up to a megabyte of HTML, goes out as a piece of its own, never joined into the frame.
  const at = frame.indexOf(ENTRIES)
  yield frame.slice(0, at)
  yield entry.body_html
  yield frame.slice(at + ENTRIES.length)
}

/** The 404 page: says only that there is no changelog at this address. */
export function changelogNotFoundPage(): string {
  return page('Changelog not found', html`<h1>Changelog not found</h1>
<p>There is no changelog at this address. Check the link you followed.</p>`)
}

/** The permalink's 404: the same words for a draft, a scheduled, a deleted and an unknown entry. */
export function changelogEntryNotFoundPage(): string {
  return page('Entry not found', html`<h1>Entry not found</h1>
<p>There is no published changelog entry at this address. Check the link you followed.</p>`)
}
