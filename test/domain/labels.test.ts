import t from 'tap'
import { normalizeLabels } from '../../src/domain/labels.js'

t.test('labels are trimmed, lowercased and de-duplicated in first-seen order', async (t) => {
  t.strictSame(normalizeLabels(['New', 'new ']), { ok: true, labels: ['new'] })
  t.strictSame(normalizeLabels([' UI', 'Fix', 'ui', 'NEW', 'fix\t']), { ok: true, labels: ['ui', 'fix', 'new'] })
  t.strictSame(normalizeLabels([]), { ok: true, labels: [] })
})

t.test('inner white space is kept', async (t) => {
  t.strictSame(normalizeLabels(['  Dark  Mode ']), { ok: true, labels: ['dark  mode'] })
})

t.test('a label that lowercasing makes longer than 32 characters is refused, with its index', async (t) => {
  // `İ` (1 code point) lowercases to `i̇` (2 code points).
  t.strictSame(normalizeLabels(['ok', 'İ'.repeat(17)]), { ok: false, index: 1, message: 'must have at most 32 characters once lowercased and in NFC' })
  t.strictSame(normalizeLabels(['İ'.repeat(16)]).ok, true)
  // Code points, not UTF-16 units, are counted, as JSON Schema counts them.
  t.strictSame(normalizeLabels(['🚀'.repeat(32)]), { ok: true, labels: ['🚀'.repeat(32)] })
})
