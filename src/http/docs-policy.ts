// The Content-Security-Policy of the interactive reference at /docs/ (Scalar): the page may run
// its own script and nothing else, so that nothing in the spec it renders can run code.
import { createHash } from 'node:crypto'

const INLINE_SCRIPT = /<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g

/**
 * The policy for one rendering of the page. Scalar starts itself with an inline script holding
 * its configuration: that script is allowed by its hash, computed from the page actually sent,
 * so a Scalar upgrade that changes it cannot silently break the page or widen the policy.
 */
export function docsPolicy(html: string): string {
  const hashes = [...html.matchAll(INLINE_SCRIPT)].map(([, body]) => `'sha256-${createHash('sha256').update(body!).digest('base64')}'`)
  return [
    "default-src 'none'",
    // js/scalar.js, from this origin, and the inline start-up script.
    `script-src 'self' ${hashes.join(' ')}`,
    // Scalar's components set style attributes and insert <style> elements at run time, with
    // no nonce to tell them from injected ones; inline styles cannot run code.
    "style-src 'self' 'unsafe-inline'",
    // The spec it renders (/openapi.json) and the requests of its "Test request" client.
    "connect-src 'self'",
    // Icons and logos drawn as data: URIs.
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}
