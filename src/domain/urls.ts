// URLs that clients give the service (a program's access_url, a webhook endpoint's url) are
// parsed, never matched by an unanchored pattern (api-contract §11). A pattern cannot parse a URL,
// and parsers disagree at the edges (`https://a.example%40b.example/`), so a URL must be an RFC
// 3986 URI that the WHATWG parser (browsers, fetch) also reads, with no user info: a link like
// `https://trusted.example@evil.example/` shows one host and opens another.
import ajvFormats from 'ajv-formats'

// The package's public accessor of its `uri` check (a function in full mode), not its dist/ files.
const isRfc3986Uri = ajvFormats.default.get('uri', 'full') as (value: string) => boolean

/**
 * The URL `value` names, as browsers read it, when it is one the service accepts: an RFC 3986
 * URI without user info, and without a fragment (`#`, even an empty one) when `fragment` is
 * false. Undefined otherwise. The scheme and length are the schema's to check (openapi.yaml).
 */
export function parseUrl(value: string, options: { fragment: boolean } = { fragment: true }): URL | undefined {
  if (!isRfc3986Uri(value)) return undefined
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return undefined
  }
  if (url.username !== '' || url.password !== '') return undefined
  // A serialized URL holds `#` only where its fragment begins (url.hash is '' for an empty one).
  if (!options.fragment && url.href.includes('#')) return undefined
  return url
}
