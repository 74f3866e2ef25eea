// The stored HTML that public pages and feeds hold while they are sent has a budget per instance
// (src/portal/html-budget.ts): a client that stops reading a large page holds its bytes, and
// past the budget other large pages are a 503 instead of the heap running out (found by an
// outside review: sixteen stalled reads of a 60 MB page ended the process).
import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { ApiError } from '../../src/http/errors.js'
import { htmlBudget } from '../../src/portal/html-budget.js'
import { STALLED_CONNECTION_MS } from '../../src/app.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { overHttp } from '../helpers/over-http.js'

t.test('bytes are taken up to the budget, given back once, and one body alone always fits', async (t) => {
  const budget = htmlBudget(100)
  const first = budget.take(60)
  t.throws(() => budget.take(50), new ApiError('unavailable', 'Too many large pages are being sent right now; retry shortly.'))
  try {
    budget.take(50)
  } catch (error) {
    t.same((error as ApiError).options.headers, { 'retry-after': '5' }, 'with Retry-After')
  }
  first()
  first()
  t.equal(budget.held(), 0, 'a release twice gives back once')
  const second = budget.take(50)
  const third = budget.take(50)
  t.equal(budget.held(), 100, 'up to the budget exactly')
  second()
  third()
  const alone = budget.take(1_000)
  t.equal(budget.held(), 1_000, 'a body larger than the budget is sent when nothing else is held')
  alone()
})

/**
 * A project with forty published entries of about 600 KB of HTML each (a quote is six bytes
 * escaped): a 24 MB page. Made once, through the shared app; the tests' apps read it from the
 * same database.
 */
let largeChangelog: Promise<string> | undefined
function largeChangelogId(): Promise<string> {
  largeChangelog ??= (async () => {
    const app = await testApp()
    const { id, key } = await createProject()
    for (let i = 0; i < 40; i++) {
      const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: `Large ${i}`, body: '"'.repeat(100_000), status: 'published' } })
      if (created.status !== 201) throw new Error(`entry ${i}: ${created.status}`)
    }
    return id
  })()
  return largeChangelog
}

/**
 * Asks for the page and never reads the answer: the socket is paused, so once the kernel's
 * buffers (a few MB each way) are full the server's writes stall.
 */
function stalledRead(app: FastifyInstance, path: string): Socket {
  const { port } = app.server.address() as { port: number }
  const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`))
  socket.pause()
  socket.on('error', () => {})
  return socket
}

/** Resolves once `held()` says so; the test's timeout bounds the wait. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10))
}

t.test('a page a client stops reading holds its HTML until its connection closes; meanwhile another is a 503', async (t) => {
  const budget = htmlBudget(1)
  const app = await testApp({}, { portalHtml: budget })
  const id = await largeChangelogId()
  const send = await overHttp(app)
  const stalled = stalledRead(app, `/portal/${id}/changelog?limit=40`)
  await until(() => budget.held() > 20_000_000)
  t.pass('the page is being sent, its HTML held')
  const refused = await send({ path: `/portal/${id}/changelog.json` })
  t.same([refused.status, refused.headers['retry-after'], JSON.parse(refused.body).code], [503, '5', 'unavailable'], 'a second large body, beyond the budget')
  stalled.destroy()
  await until(() => budget.held() === 0)
  t.pass('the stalled page gave its bytes back once its connection closed')
  t.equal((await send({ path: `/portal/${id}/changelog.json` })).status, 200, 'then the feed is sent')
  t.equal(budget.held(), 0, 'and its bytes given back once sent')
})

t.test('a connection that stalls is closed by the server, and the page it held gives its HTML back', async (t) => {
  t.equal((await testApp()).server.timeout, STALLED_CONNECTION_MS, `a minute by default (${STALLED_CONNECTION_MS} ms)`)
  const budget = htmlBudget()
  const app = await testApp({}, { portalHtml: budget, stalledConnectionMs: 200 })
  const id = await largeChangelogId()
  await overHttp(app)
  const stalled = stalledRead(app, `/portal/${id}/changelog?limit=40`)
  t.teardown(() => stalled.destroy())
  await until(() => budget.held() > 20_000_000)
  t.pass('the page is being sent, its HTML held')
  await until(() => budget.held() === 0)
  t.pass('the server closed the stalled connection, and the HTML was given back')
})
