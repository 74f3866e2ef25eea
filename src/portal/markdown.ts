// Changelog bodies are Markdown written through the API, and the portal shows them to anyone:
// render them so that nothing in a body can run in a visitor's browser. markdown-it with
// `html: false` turns every tag in the source into text, and the link check below lets only
// web and mail addresses become links or images.
//
// Rendering happens when a body is written, never when it is read, and never on the event loop:
// markdown-rendering.ts runs renderBounded() in a worker thread under a deadline (markdown-it has
// inputs that cost hundreds of milliseconds, `![` repeated among them), and the HTML is stored.
import MarkdownIt, { type Token } from 'markdown-it'
import { escapeHtml } from './html.js'

const md = new MarkdownIt({ html: false, linkify: false, typographer: false })

// A destination with a scheme must be http, https or mailto (markdown-it's own check only
// refuses javascript:, vbscript:, file: and most data:). Any other destination must be a plain
// relative reference, with no colon before its first `/`, `?` or `#`, so that nothing a browser
// might still read as a scheme gets through. markdown-it decodes entities and percent-encodes
// control characters and spaces before this check: `java&#115;cript:` arrives as `javascript:`
// and `java<TAB>script:` as `java%09script:`, and both are refused.
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/
const ALLOWED_SCHEMES = new Set(['http', 'https', 'mailto'])
md.validateLink = (url: string): boolean => {
  const scheme = SCHEME.exec(url)
  if (scheme) return ALLOWED_SCHEMES.has(scheme[1]!.toLowerCase())
  return !/^[^/?#]*:/.test(url)
}

/**
 * The text a reader (or a screen reader) meets in inline tokens: text, code, and images' alt
 * text, which markdown-it writes without code (renderInlineAsText).
 */
const shownText = (tokens: readonly Token[], code = true): string =>
  tokens
    .map((token) => (token.type === 'image' ? shownText(token.children ?? [], false) : token.type === 'text' || (code && token.type === 'code_inline') ? token.content : ''))
    .join('')

/** Nothing to read: white space, and characters that show nothing (U+200B, a soft hyphen, U+2800...). */
const NOTHING_TO_READ = /^[\s\p{Default_Ignorable_Code_Point}\u2800\u3164]*$/u

/**
 * A link with nothing to read in it (`[](https://x)`, `[![](shot.png)](https://x)`) has no
 * accessible name, which WCAG 2.4.4 and 4.1.2 require (the portal's pages are held to WCAG 2.1
 * AA, contract §13; found by an outside review with axe-core): it shows its address, or, around
 * an image, is named by it. Invisible characters (U+200B, a soft hyphen) are nothing to read.
 * One without an address that shows anything (`[text]()`, `[]()`) is no link: what it holds
 * stays, unlinked; so does a link inside a link's text. Each paragraph's tokens are rebuilt once,
 * however many such links it holds.
 */
md.core.ruler.push('named_links', (state) => {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children?.some((token) => token.type === 'link_open')) continue
    const rebuilt: Token[] = []
    const children = block.children
    for (let open = 0; open < children.length; open++) {
      const link = children[open]!
      if (link.type !== 'link_open') {
        rebuilt.push(link)
        continue
      }
      // Its own link_close: an autolink inside its text (`[<https://a>](https://b)`) nests another.
      let close = open + 1
      for (let depth = 0; close < children.length && !(children[close]!.type === 'link_close' && depth === 0); close++) {
        if (children[close]!.type === 'link_open') depth++
        else if (children[close]!.type === 'link_close') depth--
      }
      // HTML has no link inside a link (a browser splits them, the outer one left empty): the
      // inner one's text stays, unlinked.
      const inside = children.slice(open + 1, close).filter((token) => token.type !== 'link_open' && token.type !== 'link_close')
      const address = md.normalizeLinkText(link.attrGet('href') ?? '')
      const end = children.slice(close, close + 1)
      if (NOTHING_TO_READ.test(address)) {
        // No link around it: a link inside it stays one (`[<https://a>]()`).
        rebuilt.push(...children.slice(open + 1, close))
      } else if (!NOTHING_TO_READ.test(shownText(inside))) {
        rebuilt.push(link, ...inside, ...end)
      } else if (inside.some((token) => token.type === 'image')) {
        link.attrSet('aria-label', address)
        rebuilt.push(link, ...inside, ...end)
      } else {
        const text = new state.Token('text', '', 0)
        text.content = address
        rebuilt.push(link, ...inside, text, ...end)
      }
      open = close
    }
    block.children = rebuilt
  }
})

/**
 * The most HTML one body may become. Escaping alone makes at most six characters of one
 * (`"` → `&quot;`), so a body of the contract's 100 000 characters needs 600 000; markdown-it's
 * output has no such bound (one reference definition with a long URL, used 30 000 times, turns
 * 100 KB into 145 MB), and every page and feed would carry it.
 */
export const MAX_HTML_LENGTH = 1_000_000

/** The body as HTML safe to insert into a page or a feed's content. */
export function renderMarkdown(source: string): string {
  return md.render(source)
}

/**
 * What a body shows when its Markdown cannot be rendered within the bounds: its text, escaped,
 * a paragraph per blank-line-separated block. Linear in the body, so cheap anywhere.
 */
export function plainTextHtml(source: string): string {
  return source
    .split(/\n[ \t]*\n/)
    .map((block) => block.trim())
    .filter((block) => block !== '')
    .map((block) => `<p>${escapeHtml(block)}</p>\n`)
    .join('')
}

/** renderMarkdown(), or the plain text when the HTML would exceed MAX_HTML_LENGTH. */
export function renderBounded(source: string): string {
  const rendered = renderMarkdown(source)
  return rendered.length <= MAX_HTML_LENGTH ? rendered : plainTextHtml(source)
}
