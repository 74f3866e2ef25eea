// Changelog bodies are Markdown written through the API, and the portal shows them to anyone:
// render them so that nothing in a body can run in a visitor's browser. markdown-it with
// `html: false` turns every tag in the source into text, and the link check below lets only
// web and mail addresses become links or images.
import MarkdownIt from 'markdown-it'

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

/** The body as HTML safe to insert into a page or a feed's content. */
export function renderMarkdown(source: string): string {
  return md.render(source)
}
