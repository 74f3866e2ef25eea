// An email address, as enrollment (the API) and public signup (the portal) both take it: one
// rule, so that an address one accepts the other accepts too, and both store the same form
// (enrollment and signup are idempotent on it). openapi.yaml writes EMAIL_PATTERN out for the
// API's body; test/domain/email.test.ts holds the two equal.

export const EMAIL_MAX_LENGTH = 254

/** An address as sent: trimmed, at most 254 characters with one `@` and a dot in the domain. */
export const EMAIL_PATTERN = '^\\s*(?=\\S{3,254}\\s*$)[^\\s@]+@[^\\s@.]+(?:\\.[^\\s@.]+)+\\s*$'
// `u`: lengths in characters, as JSON Schema (and so AJV, with unicodeRegExp) counts them, not UTF-16 units.
const EMAIL = new RegExp(EMAIL_PATTERN, 'u')

/**
 * The address as stored (trimmed, lowercased, and in Unicode's composed form NFC), or undefined
 * when `raw` is not an address. NFC: `jörg@` typed with a composed `ö` and with `o` and a
 * combining diaeresis is one address to a person, and was two testers (found by a contract
 * review; RFC 6532 §3.1 asks for NFC too). Lowercasing and NFC can lengthen a string ('İ' becomes
 * 'i' and a combining dot; U+0958 a letter and a nukta) past what the pattern checked, so the
 * length is checked again on the stored form.
 */
export function normaliseEmail(raw: string): string | undefined {
  if (!EMAIL.test(raw)) return undefined
  const email = raw.trim().toLowerCase().normalize('NFC')
  return [...email].length <= EMAIL_MAX_LENGTH ? email : undefined
}
