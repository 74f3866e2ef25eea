// isoString must write exactly what toISOString writes, for every instant a Date can hold: the
// records of every response are made with it.
import fc from 'fast-check'
import t from 'tap'
import { isoString } from '../../src/domain/iso-time.js'

t.test('isoString writes what toISOString writes, for any date', async (t) => {
  const writesTheSame = (date: Date) => isoString(date) === date.toISOString()
  // Mostly the years the fast path writes, then anywhere in a Date's range.
  const fastPathYears = fc.date({ min: new Date('0990-01-01T00:00:00.000Z'), max: new Date('+010010-01-01T00:00:00.000Z'), noInvalidDate: true })
  fc.assert(fc.property(fastPathYears, writesTheSame), { numRuns: 20_000 })
  fc.assert(fc.property(fc.date({ noInvalidDate: true }), writesTheSame), { numRuns: 2_000 })
  // The edges of the fast path, and either side of them.
  for (const text of ['0999-12-31T23:59:59.999Z', '1000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '+010000-01-01T00:00:00.000Z', '-000001-01-01T00:00:00.000Z']) {
    t.equal(isoString(new Date(text)), text)
  }
  for (const ms of [0, 7, 45, 999]) t.equal(isoString(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, ms))), new Date(Date.UTC(2026, 0, 2, 3, 4, 5, ms)).toISOString())
})

t.test('an invalid date throws as toISOString does', async (t) => {
  t.throws(() => isoString(new Date(NaN)), RangeError)
})
