// Server-rendered portal pages: one escape function that every interpolated value goes
// through, and one small layout (plain HTML, a little inline CSS, readable on a phone).
// The `html` tag escapes every value it is given, so a template cannot forget to; only a
// value already built by `html` (a SafeHtml) is inserted as it is.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text made safe for an HTML text node or a quoted attribute value. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

/** Markup that is already safe: built by `html` or by `escapeHtml`. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

type Interpolated = SafeHtml | string | number | null | undefined | false | readonly Interpolated[]

function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return ''
  if (value instanceof SafeHtml) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  return escapeHtml(value)
}

/** A template tag: strings are escaped, SafeHtml and arrays of it are inserted as they are. */
export function html(strings: TemplateStringsArray, ...values: Interpolated[]): SafeHtml {
  let out = strings[0]!
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!
  })
  return new SafeHtml(out)
}

/**
 * Link colours with enough contrast (WCAG 1.4.3, 4.5:1) on the light and the dark canvas alike:
 * the browser's defaults (and LinkText) are dark blues that fail on a dark background. The
 * style sheets also paint the root with Canvas and CanvasText explicitly, so that contrast
 * checkers (axe-core) see the background a reader sees rather than assume white.
 */
export const LINK_COLOURS = `
  a { color: #0645ad; }
  a:visited { color: #5b3a99; }
  @media (prefers-color-scheme: dark) {
    a { color: #8ab4f8; }
    a:visited { color: #c58af9; }
  }
`

const STYLE = `
  :root { color-scheme: light dark; background: Canvas; color: CanvasText; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 40rem; margin: 0 auto; padding: 1rem; overflow-wrap: anywhere; }
  h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
  form { margin: 1rem 0; }
  label { display: block; margin: 0.75rem 0 0.25rem; font-weight: 600; }
  input, textarea, select, button { font: inherit; max-width: 100%; box-sizing: border-box; }
  input[type=email], textarea, select { width: 100%; padding: 0.5rem; }
  button { padding: 0.6rem 1.2rem; margin: 0.25rem 0.5rem 0.25rem 0; cursor: pointer; }
  .notice { padding: 0.75rem 1rem; border-left: 4px solid currentColor; }
  .meta { opacity: 0.8; }
${LINK_COLOURS}
`

/**
 * A whole document: `title` is escaped; `head` (extra head elements) and `body` are markup built
 * with `html`; `style` replaces the portal's style sheet; `lang` is the language of the page's
 * content (English, the portal's own words, unless said). Only the public changelog asks search
 * engines to index it.
 */
export function htmlDocument(title: string, body: SafeHtml, options: { head?: SafeHtml; style?: string; indexable?: boolean; lang?: string } = {}): string {
  return html`<!doctype html>
<html lang="${options.lang ?? 'en'}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${options.indexable ? '' : html`<meta name="robots" content="noindex">
`}<title>${title}</title>
${options.head ?? ''}<style>${new SafeHtml(options.style ?? STYLE)}</style>
</head>
<body>
${body}
</body>
</html>
`.value
}

/** A page of the portal: its body in one <main>. */
export function page(title: string, body: SafeHtml): string {
  return htmlDocument(title, html`<main>
${body}
</main>`)
}

export const HTML_TYPE = 'text/html; charset=utf-8'

/**
 * What every portal page sends besides its type and caching: no script at all, no framing, no
 * Referer to the sites it links to. Pages that show changelog entries allow their images.
 */
export const pageSecurityHeaders = (options: { images?: boolean } = {}): Record<string, string> => ({
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy': [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    ...(options.images ? ['img-src http: https:'] : []),
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; '),
})
