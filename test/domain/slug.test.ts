import t from 'tap'
import { SLUG_MAX_WITH_SUFFIX, slugify } from '../../src/domain/slug.js'
import { spec } from '../helpers/spec-check.js'

t.test('slugify follows the contract examples', async (t) => {
  t.equal(slugify('Ça va ? Déjà!'), 'ca-va-deja')
  t.equal(slugify('日本語 beta'), 'beta')
  t.equal(slugify('🚀🚀'), 'program')
  t.equal(slugify('   '), 'program')
  t.equal(slugify('---'), 'program')
})

t.test('slugify lowercases, strips diacritics and collapses separators', async (t) => {
  t.equal(slugify('Hello World'), 'hello-world')
  t.equal(slugify('  --Hello,   World!!  '), 'hello-world')
  t.equal(slugify('iOS 17.2 Beta'), 'ios-17-2-beta')
  t.equal(slugify('Crème Brûlée'), 'creme-brulee')
  t.equal(slugify('ÅNGSTRÖM'), 'angstrom')
  t.equal(slugify('İstanbul'), 'istanbul', 'a dotted capital I loses its dot')
  t.equal(slugify('ﬁnal ①'), 'final-1', 'NFKD expands compatibility characters')
  t.equal(slugify('a_b.c/d'), 'a-b-c-d')
  t.equal(slugify('Straße'), 'stra-e', 'a letter with no decomposition is a separator')
})

t.test('a slug over 60 characters is cut back to a word boundary', async (t) => {
  const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo'
  // The full slug is 67 characters; the 60th falls inside 'juliet'.
  t.equal(slugify(words), 'alpha-bravo-charlie-delta-echo-foxtrot-golf-hotel-india')
  t.ok(slugify(words).length <= 60)
})

t.test('a cut that falls between words keeps the whole last word', async (t) => {
  const sixty = `${'a'.repeat(29)} ${'b'.repeat(30)}` // 29 + 1 + 30 = 60 characters
  t.equal(slugify(`${sixty} more`), `${'a'.repeat(29)}-${'b'.repeat(30)}`, 'the character after the cut is a hyphen')
  const fiftyNine = `${'a'.repeat(29)} ${'b'.repeat(29)}`
  t.equal(slugify(`${fiftyNine} more`), `${'a'.repeat(29)}-${'b'.repeat(29)}`, 'the last kept character is a hyphen, trimmed')
})

t.test('exactly 60 characters is kept whole', async (t) => {
  const sixty = `${'a'.repeat(30)}-${'b'.repeat(29)}`
  t.equal(slugify(sixty), sixty)
})

t.test('one word longer than 60 characters is cut hard at 60', async (t) => {
  t.equal(slugify('x'.repeat(80)), 'x'.repeat(60))
  t.equal(slugify(`${'x'.repeat(80)} tail`), 'x'.repeat(60))
})

t.test('the cut backs off to the last hyphen before it, not the first', async (t) => {
  const name = `ab cd ${'e'.repeat(60)}`
  t.equal(slugify(name), 'ab-cd')
})

t.test("the spec's bound on a slug is a slug's with its suffix, which the portal's pages check too", async (t) => {
  const program = (spec as { components: { schemas: Record<string, { properties: Record<string, { maxLength?: number }> }> } }).components.schemas.BetaProgram!
  t.equal(program.properties.slug!.maxLength, SLUG_MAX_WITH_SUFFIX)
  t.equal(`${'a'.repeat(60)}-999999999`.length, SLUG_MAX_WITH_SUFFIX, 'the longest slug the repository can give')
})
