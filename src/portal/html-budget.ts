// The stored HTML that the public pages and feeds hold while they are sent. A page or feed reads
// its entries' HTML (up to a megabyte each, a hundred to a page) before its first byte goes out,
// and holds it until its last: a client that stops reading keeps it for as long as its connection
// stays open, and a few such clients could exhaust the heap (found by an outside review: sixteen
// stalled reads of a 60 MB page ended the process). Each body takes its bytes from the instance's
// budget before it reads them, and gives them back when its stream closes (sent, or its
// connection gone); a body that would go beyond the budget is a 503 with Retry-After.
import { ApiError } from '../http/errors.js'

/** Bytes of stored HTML an instance's pages and feeds may hold at once. */
export const PORTAL_HTML_BUDGET = 200 * 1024 * 1024

export interface HtmlBudget {
  /** Takes `bytes` (503 when they do not fit beside what is held); returns their release, which may be called more than once. */
  take(bytes: number): () => void
  /** Bytes held now. */
  held(): number
}

export function htmlBudget(max = PORTAL_HTML_BUDGET): HtmlBudget {
  let held = 0
  return {
    take(bytes) {
      // One body alone may always be sent, whatever its size.
      if (held > 0 && held + bytes > max) {
        throw new ApiError('unavailable', 'Too many large pages are being sent right now; retry shortly.', { headers: { 'retry-after': '5' } })
      }
      held += bytes
      let released = false
      return () => {
        if (!released) (released = true), (held -= bytes)
      }
    },
    held: () => held,
  }
}
