// What text PostgreSQL can store as it was sent. A text column holds no U+0000, and a lone UTF-16
// surrogate has no UTF-8 form: one backend refuses it, the other silently stores U+FFFD.

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Why `text` could not be stored as sent, as a validation message; undefined when it can. */
export function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character (\\u0000)'
  if (LONE_SURROGATE.test(text)) return 'must not contain a lone UTF-16 surrogate'
  return undefined
}
