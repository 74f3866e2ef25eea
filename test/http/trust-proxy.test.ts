// Behind a load balancer every request comes from the balancer's address. With TRUST_PROXY naming
// it, the budgets that count by client address (failed authentications here; the portal's and
// public signup's the same way, through request.ip) count by the address its X-Forwarded-For
// names; without it, or from any other address, the header is ignored, so a client cannot
// choose the address it is counted as.
import { randomInt } from 'node:crypto'
import t from 'tap'
import { call, testApp } from '../helpers/app.js'

const BALANCER = '192.0.2.10'
const randomAddress = () => `198.51.${randomInt(256)}.${randomInt(256)}`
/** A would-be 401 (no key) from `remoteAddress`, with `forwardedFor` as X-Forwarded-For. */
const failure = (remoteAddress: string, forwardedFor?: string) => ({
  url: '/v1/changelog',
  remoteAddress,
  ...(forwardedFor ? { headers: { 'x-forwarded-for': forwardedFor } } : {}),
})

t.test('from a trusted proxy, each forwarded client has its own failure budget', async (t) => {
  const app = await testApp({ authFailuresPerMinute: 2, trustProxy: [BALANCER] })
  const [one, other] = [randomAddress(), randomAddress()]
  for (let i = 0; i < 2; i++) t.equal((await call(t, app, failure(BALANCER, one))).status, 401, `${one}: within its budget`)
  t.equal((await call(t, app, failure(BALANCER, one))).status, 429, `${one}: past its budget`)
  t.equal((await call(t, app, failure(BALANCER, other))).status, 401, `${other}, through the same balancer, has a budget of its own`)
  // A client writes what it likes at the left of X-Forwarded-For; the balancer appends the address it saw.
  t.equal((await call(t, app, failure(BALANCER, `${randomAddress()}, ${one}`))).status, 429, 'an address the client prepended is not believed')
})

t.test('without TRUST_PROXY, or from an address it does not name, X-Forwarded-For is ignored', async (t) => {
  for (const [name, trustProxy] of [
    ['unset', []],
    ['naming another address', [BALANCER]],
  ] as const) {
    const app = await testApp({ authFailuresPerMinute: 2, trustProxy })
    const from = `203.0.113.${randomInt(256)}`
    for (let i = 0; i < 2; i++) t.equal((await call(t, app, failure(from, randomAddress()))).status, 401, `${name}: within the budget`)
    t.equal((await call(t, app, failure(from, randomAddress()))).status, 429, `${name}: a new forwarded address each time still counts against ${from}`)
  }
})

t.test("from a trusted proxy, the portal's budget is each forwarded client's own", async (t) => {
  const app = await testApp({ rateLimitPerMinute: 2, trustProxy: [BALANCER] })
  const page = (forwardedFor: string) => app.inject({ url: '/portal/prj_000000000000000000000/changelog', remoteAddress: BALANCER, headers: { 'x-forwarded-for': forwardedFor } })
  const [one, other] = [randomAddress(), randomAddress()]
  for (let i = 0; i < 2; i++) t.equal((await page(one)).statusCode, 404, `${one}: an unknown project's page, within the budget`)
  t.equal((await page(one)).statusCode, 429, `${one}: past its budget`)
  t.equal((await page(other)).statusCode, 404, `${other} has a budget of its own`)
})
