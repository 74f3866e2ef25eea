// Behind a load balancer every request comes from the balancer's address. With TRUST_PROXY naming
// it, the budgets that count by client address (failed authentications here; the portal's and
// public signup's the same way, through request.ip) count by the address its X-Forwarded-For
// names; without it, or from any other address, the header is ignored, so a client cannot
// choose the address it is counted as.
import t from 'tap'
import { call, testApp } from '../helpers/app.js'

// Each test has an app of its own, so its budgets start empty: fixed addresses do.
const BALANCER = '192.0.2.10'
const [ONE, OTHER, THIRD] = ['198.51.100.1', '198.51.100.2', '198.51.100.3']
/** A would-be 401 (no key) from `remoteAddress`, with `forwardedFor` as X-Forwarded-For. */
const failure = (remoteAddress: string, forwardedFor?: string) => ({
  url: '/v1/changelog',
  remoteAddress,
  ...(forwardedFor ? { headers: { 'x-forwarded-for': forwardedFor } } : {}),
})

t.test('from a trusted proxy, each forwarded client has its own failure budget', async (t) => {
  const app = await testApp({ authFailuresPerMinute: 2, trustProxy: [BALANCER] })
  for (let i = 0; i < 2; i++) t.equal((await call(t, app, failure(BALANCER, ONE))).status, 401, `${ONE}: within its budget`)
  t.equal((await call(t, app, failure(BALANCER, ONE))).status, 429, `${ONE}: past its budget`)
  t.equal((await call(t, app, failure(BALANCER, OTHER))).status, 401, `${OTHER}, through the same balancer, has a budget of its own`)
  // A client writes what it likes at the left of X-Forwarded-For; the balancer appends the address it saw.
  t.equal((await call(t, app, failure(BALANCER, `${THIRD}, ${ONE}`))).status, 429, 'an address the client prepended is not believed')
})

t.test('without TRUST_PROXY, or from an address it does not name, X-Forwarded-For is ignored', async (t) => {
  for (const [name, trustProxy] of [
    ['unset', []],
    ['naming another address', [BALANCER]],
  ] as const) {
    const app = await testApp({ authFailuresPerMinute: 2, trustProxy })
    const from = '203.0.113.9'
    for (const forwarded of [ONE, OTHER]) t.equal((await call(t, app, failure(from, forwarded))).status, 401, `${name}: within the budget`)
    t.equal((await call(t, app, failure(from, THIRD))).status, 429, `${name}: a new forwarded address each time still counts against ${from}`)
  }
})

t.test("from a trusted proxy, the portal's budget is each forwarded client's own", async (t) => {
  const app = await testApp({ rateLimitPerMinute: 2, trustProxy: [BALANCER] })
  const page = (forwardedFor: string) => app.inject({ url: '/portal/prj_000000000000000000000/changelog', remoteAddress: BALANCER, headers: { 'x-forwarded-for': forwardedFor } })
  for (let i = 0; i < 2; i++) t.equal((await page(ONE)).statusCode, 404, `${ONE}: an unknown project's page, within the budget`)
  t.equal((await page(ONE)).statusCode, 429, `${ONE}: past its budget`)
  t.equal((await page(OTHER)).statusCode, 404, `${OTHER} has a budget of its own`)
})

t.test('a forwarded address counts by itself: its port dropped, IPv6 by /64, and text that is no address as the proxy', async (t) => {
  const app = await testApp({ authFailuresPerMinute: 2, trustProxy: [BALANCER] })
  const sharing = async (name: string, forwarded: [string, string, string]) => {
    const statuses = []
    for (const value of forwarded) statuses.push((await call(t, app, failure(BALANCER, value))).status)
    const shown = forwarded.map((value) => (value.length > 40 ? `${value.slice(0, 8)}… (${value.length} characters)` : value))
    t.same(statuses, [401, 401, 429], `${name}: one budget for ${shown.join(', ')}`)
  }
  await sharing('a port', ['203.0.113.7:40000', '203.0.113.7:40001', '203.0.113.7'])
  await sharing('an IPv6 address with a port', ['[2001:db8:1:1::1]:443', '[2001:db8:1:1::1]:444', '2001:db8:1:1::1'])
  await sharing('a /64', ['2001:db8:2:2::1', '2001:db8:2:2::2', '2001:db8:2:2:ffff::3'])
  await sharing('text that is no address', ['unknown', 'garbage', 'x'.repeat(8000)])
  t.equal((await call(t, app, failure(BALANCER, ONE))).status, 401, 'a real address behind the same proxy keeps its own budget')
})
