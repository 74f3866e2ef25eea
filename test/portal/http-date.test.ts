// If-Modified-Since is read as an HTTP-date (RFC 9110 §5.6.7) and ignored when it is not one
// (§13.1.3). Date.parse took `9999` and `foo 2099` for dates, so a feed answered 304 to them
// (found by an outside review).
import t from 'tap'
import { httpDate } from '../../src/portal/changelog-cache.js'

const NOV_6_1994 = Date.UTC(1994, 10, 6, 8, 49, 37)

t.test('the three forms a recipient must accept', async (t) => {
  t.equal(httpDate('Sun, 06 Nov 1994 08:49:37 GMT'), NOV_6_1994, 'IMF-fixdate')
  t.equal(httpDate('Sunday, 06-Nov-94 08:49:37 GMT'), NOV_6_1994, 'RFC 850')
  t.equal(httpDate('Sun Nov  6 08:49:37 1994'), NOV_6_1994, 'asctime')
  t.equal(httpDate(new Date(NOV_6_1994).toUTCString()), NOV_6_1994, "what Last-Modified sends (toUTCString) reads back")
})

t.test("an RFC 850 date's two-digit year is the latest not more than 50 years ahead", async (t) => {
  const now = new Date(Date.UTC(2026, 10, 28))
  t.equal(new Date(httpDate('Monday, 01-Jan-76 00:00:00 GMT', now)!).getUTCFullYear(), 2076, '50 years ahead')
  t.equal(new Date(httpDate('Monday, 01-Jan-77 00:00:00 GMT', now)!).getUTCFullYear(), 1977, '51 years ahead is the last century')
  t.equal(new Date(httpDate('Monday, 01-Jan-25 00:00:00 GMT', now)!).getUTCFullYear(), 2025)
})

t.test('anything else is no date', async (t) => {
  for (const value of [
    '9999',
    'foo 2099',
    '+275760-09-13',
    '2026-11-28T00:00:00Z',
    '',
    'Sun, 06 Nov 1994 08:49:37 UTC',
    'sun, 06 nov 1994 08:49:37 GMT',
    'Sun, 6 Nov 1994 08:49:37 GMT',
    'Sun, 06 Nov 94 08:49:37 GMT',
    'Sun, 31 Feb 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 24:00:00 GMT',
    'Sun, 06 Nov 1994 08:60:00 GMT',
    'Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT',
    ' Sun, 06 Nov 1994 08:49:37 GMT',
  ]) {
    t.equal(httpDate(value), undefined, JSON.stringify(value))
  }
})
