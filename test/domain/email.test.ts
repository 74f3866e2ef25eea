// One email rule for enrollment (the API, whose schema writes the pattern out) and public
// signup (the portal, which has no schema pattern).
import t from 'tap'
import { EMAIL_PATTERN, normaliseEmail } from '../../src/domain/email.js'
import { spec } from '../helpers/spec-check.js'

t.test("the spec's email pattern is the one definition's", async (t) => {
  const found: string[] = []
  const walk = (node: unknown): void => {
    if (!node || typeof node !== 'object') return
    for (const [key, value] of Object.entries(node)) {
      if (key === 'email' && value && typeof value === 'object' && typeof (value as { pattern?: unknown }).pattern === 'string') found.push((value as { pattern: string }).pattern)
      walk(value)
    }
  }
  walk(spec)
  t.ok(found.length > 0, 'the spec has an email pattern')
  for (const pattern of found) t.equal(pattern, EMAIL_PATTERN)
})

t.test('trimmed and lowercased; refused when not an address or too long once lowercased', async (t) => {
  t.equal(normaliseEmail('  Ada@Example.COM '), 'ada@example.com')
  for (const bad of ['', 'plain', 'a@b', 'a b@c.co', '<x>@y', `${'x'.repeat(250)}@example.com`]) t.equal(normaliseEmail(bad), undefined, JSON.stringify(bad))
  // 250 characters as sent, 254 + 2 once 'İ' lowercases to two code points.
  t.equal(normaliseEmail(`${'İ'.repeat(2)}${'x'.repeat(240)}@example.com`), undefined)
  t.equal(normaliseEmail(`İ${'x'.repeat(240)}@example.com`), `i̇${'x'.repeat(240)}@example.com`)
})

t.test('lengths count characters, as the schema does: an address of emoji within 254 characters is one', async (t) => {
  // 130 emoji are 260 UTF-16 units: the pattern without its `u` flag counted those, and refused
  // an address the schema (AJV, unicodeRegExp) accepts (found by a partner review).
  const email = `${'😀'.repeat(130)}@b.co`
  t.equal([...email].length, 135)
  t.ok(new RegExp(EMAIL_PATTERN, 'u').test(email), 'the schema accepts it')
  t.equal(normaliseEmail(email), email)
  t.equal(normaliseEmail(`${'😀'.repeat(250)}@b.co`), undefined, '255 characters: refused')
})
