import t from 'tap'
import { canonicalLocale, localeKey, sameLocale } from '../../src/domain/locale.js'

t.test('canonical case by subtag shape', async (t) => {
  const cases: [string, string][] = [
    ['en', 'en'],
    ['EN', 'en'],
    ['pt-br', 'pt-BR'],
    ['PT-br', 'pt-BR'],
    ['ZH-HANT', 'zh-Hant'],
    ['zh-hant-tw', 'zh-Hant-TW'],
    ['es-419', 'es-419'],
    ['SR-LATN-RS', 'sr-Latn-RS'],
    ['sl-ROZAJ', 'sl-rozaj'],
    ['de-DE-1996', 'de-DE-1996'],
    ['ca-ES-VALENCIA', 'ca-ES-valencia'],
    ['YUE', 'yue'],
  ]
  for (const [input, expected] of cases) t.equal(canonicalLocale(input), expected, input)
})

t.test('no alias replacement: the tag keeps its language', async (t) => {
  t.equal(canonicalLocale('iw'), 'iw')
  t.equal(canonicalLocale('IN-id'), 'in-ID')
  t.equal(canonicalLocale('zh-cmn'), 'zh-cmn')
})

t.test('locales are matched ignoring case', async (t) => {
  t.equal(localeKey('pt-BR'), 'pt-br')
  t.ok(sameLocale('pt-BR', 'PT-br'))
  t.notOk(sameLocale('pt-BR', 'pt'))
})
