// text[] as PostgreSQL writes it, read for the driver (src/db/text-array.ts).
import t from 'tap'
import { parseTextArray, textArrayLiteral } from '../../src/db/text-array.js'

t.test('PostgreSQL text form to an array: quoting, escapes, NULL, empty strings', async (t) => {
  t.same(parseTextArray('{}'), [])
  t.same(parseTextArray('{a,b}'), ['a', 'b'])
  t.same(parseTextArray(String.raw`{"c:\\temp","\\","\"quoted\"","{brace}","a,b",NULL,"NULL","",x}`), ['c:\\temp', '\\', '"quoted"', '{brace}', 'a,b', null, 'NULL', '', 'x'])
  t.same(parseTextArray('{"two  spaces","ünï😀"}'), ['two  spaces', 'ünï😀'])
})

t.test('malformed text ends, whatever it holds', async (t) => {
  // Never from PostgreSQL; a loop without end would hold the process (found by a review).
  t.ok(Array.isArray(parseTextArray('{"abc')))
  t.ok(Array.isArray(parseTextArray('{abc')))
})

t.test('an array written as a literal reads back the same; a literal passes as it is', async (t) => {
  const values = ['c:\\temp', '\\', '"q"', '{b}', 'a,b', 'NULL', '', ' x ']
  t.same(parseTextArray(textArrayLiteral(values) as string), values)
  t.equal(textArrayLiteral('{"already"}'), '{"already"}')
})
