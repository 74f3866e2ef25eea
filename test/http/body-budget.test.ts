// What large answers hold while they are sent has a budget per instance (src/http/body-budget.ts):
// a client that stops reading a large page (the portal's HTML, or the API's JSON) holds its
// bytes, and past the budget other large reads are a 503 instead of the heap running out (found
// by outside reviews: sixteen stalled reads of a 60 MB page ended the process).
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { ApiError } from '../../src/http/errors.js'
import { BODY_BUDGET, bodyBudget, CLIENT_SHARE, COUNTED_BODY_BYTES, type BodyBudget } from '../../src/http/body-budget.js'
import { INLINE_VALUE_BYTES } from '../../src/db/repos/large-values.js'
import { MIN_SEND_RATE, SEND_WINDOW_MS } from '../../src/http/send-rate.js'
import { STALLED_CONNECTION_MS } from '../../src/app.js'
import { listChangelogEntries } from '../../src/handlers/changelog.js'
import { readByKey } from '../../src/http/guard.js'
import type { KeyScopedHandler } from '../../src/http/types.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { scrape, value } from '../helpers/metrics.js'
import { overHttp } from '../helpers/over-http.js'
import { source, specProblems } from '../helpers/spec-check.js'

t.test('bytes are taken up to the budget, given back once, and one body alone always fits', async (t) => {
  const budget = bodyBudget(100)
  const first = budget.take(60, 'a')
  t.throws(() => budget.take(50, 'b'), new ApiError('unavailable', 'Too many large answers are being sent right now; retry shortly.'))
  try {
    budget.take(50, 'b')
  } catch (error) {
    t.same((error as ApiError).options.headers, { 'retry-after': '5' }, 'with Retry-After')
  }
  first.release()
  first.release()
  t.equal(budget.held(), 0, 'a release twice gives back once')
  const quarters = ['b', 'c', 'd', 'e'].map((client) => budget.take(25, client))
  t.equal(budget.held(), 100, 'up to the budget exactly')
  for (const hold of quarters) hold.release()
  const alone = budget.take(1_000, 'a')
  t.equal(budget.held(), 1_000, 'a body larger than the budget is sent when nothing else is held')
  alone.release()
})

t.test('a hold grows as a take does, refused beyond the budget or the share, and shrinks freely', async (t) => {
  const budget = bodyBudget(100)
  const answer = budget.take(20, 'a')
  answer.resize(30)
  t.equal(budget.held(), 30, 'a body alone grows as it likes')
  const other = budget.take(60, 'b')
  t.throws(() => answer.resize(50), new ApiError('unavailable', 'Too many large answers are being sent right now; retry shortly.'), 'not beyond the budget')
  t.same([budget.held(), budget.held('a')], [90, 30], 'and a refused growth holds what it held')
  answer.resize(10)
  t.same([budget.held(), budget.held('a')], [70, 10], 'shrinking gives back')
  other.release()
  const second = budget.take(10, 'a')
  t.throws(() => second.resize(20), new ApiError('unavailable', 'Too many large answers are being sent to you right now; read them, then retry.'), "nor beyond the client's share")
  for (const hold of [answer, second]) hold.release()
  t.equal(budget.held(), 0)
})

t.test(`one client holds at most ${CLIENT_SHARE * 100} % of the budget, beyond its first body`, async (t) => {
  const budget = bodyBudget(100)
  const first = budget.take(20, 'a')
  t.throws(() => budget.take(10, 'a'), new ApiError('unavailable', 'Too many large answers are being sent to you right now; read them, then retry.'))
  const other = budget.take(60, 'b')
  t.same([budget.held('a'), budget.held('b'), budget.held()], [20, 60, 80], "another client's first body fits")
  first.release()
  t.equal(budget.held('a'), 0, 'given back')
  const again = budget.take(5, 'a')
  const more = budget.take(20, 'a')
  t.equal(budget.held('a'), 25, 'up to its share exactly')
  for (const hold of [other, again, more]) hold.release()
  t.same([budget.held(), budget.held('a'), budget.held('b')], [0, 0, 0])
})

/**
 * A project with forty published entries of about 600 KB of HTML each (a quote is six bytes
 * escaped): a 24 MB page, and forty events of 100 000 quotes each (an 8 MB page of JSON). Made
 * once, through the shared app; the tests' apps read it from the same database.
 */
let largeChangelog: Promise<{ id: string; key: string }> | undefined
function largeChangelogProject(): Promise<{ id: string; key: string }> {
  largeChangelog ??= (async () => {
    const app = await testApp()
    const { id, key } = await createProject()
    for (let i = 0; i < 40; i++) {
      const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: `Large ${i}`, body: '"'.repeat(100_000), status: 'published' } })
      if (created.status !== 201) throw new Error(`entry ${i}: ${created.status}`)
    }
    return { id, key }
  })()
  return largeChangelog
}

/**
 * Asks for the page (`times` times, pipelined on one connection) and never reads the answer: the socket is paused, so once the kernel's
 * buffers (a few MB each way) are full the server's writes stall.
 */
function stalledRead(app: FastifyInstance, path: string, options: { key?: string; times?: number; forwardedFor?: string } = {}): Socket {
  const { port } = app.server.address() as { port: number }
  const { key, times = 1, forwardedFor } = options
  const headers = (key ? `Authorization: Bearer ${key}\r\n` : '') + (forwardedFor ? `X-Forwarded-For: ${forwardedFor}\r\n` : '')
  const request = `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`
  const socket = connect(port, '127.0.0.1', () => socket.write(request.repeat(times)))
  socket.pause()
  socket.on('error', () => {})
  return socket
}

/** Resolves once `held()` says so; the test's timeout bounds the wait. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10))
}

t.test('a page a client stops reading holds its HTML until its connection closes; meanwhile another is a 503', async (t) => {
  const budget = bodyBudget(1)
  const app = await testApp({}, { bodyBudgets: { portal: budget } })
  const { id } = await largeChangelogProject()
  const send = await overHttp(app)
  const stalled = stalledRead(app, `/portal/${id}/changelog?limit=40`)
  await until(() => budget.held() > 20_000_000)
  t.pass('the page is being sent, its HTML held')
  const refused = await send({ path: `/portal/${id}/changelog.json` })
  t.same([refused.status, refused.headers['retry-after'], JSON.parse(refused.body).code], [503, '5', 'unavailable'], 'a second large body, beyond the budget')
  t.same(specProblems('GET', `/portal/${id}/changelog.json`, { statusCode: refused.status, headers: refused.headers, body: refused.body }), [], 'as openapi.yaml documents it')
  const small = await createProject({ plan: 'pro' })
  t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', key: small.key, body: { title: 'Short', body: 'Short.', status: 'published' } })).status, 201)
  for (const path of [`/portal/${small.id}/changelog`, `/portal/${small.id}/changelog.json`]) {
    t.equal((await send({ path })).status, 200, `GET ${path}: a small page is never refused (under ${COUNTED_BODY_BYTES} bytes, not counted)`)
  }
  stalled.destroy()
  await until(() => budget.held() === 0)
  t.pass('the stalled page gave its bytes back once its connection closed')
  t.equal((await send({ path: `/portal/${id}/changelog.json` })).status, 200, 'then the feed is sent')
  t.equal(budget.held(), 0, 'and its bytes given back once sent')
})

t.test('a connection that stalls is closed by the server, and the page it held gives its HTML back', async (t) => {
  t.equal((await testApp()).server.timeout, STALLED_CONNECTION_MS, `a minute by default (${STALLED_CONNECTION_MS} ms)`)
  const budget = bodyBudget()
  const app = await testApp({}, { bodyBudgets: { portal: budget }, stalledConnectionMs: 200 })
  const { id } = await largeChangelogProject()
  await overHttp(app)
  const stalled = stalledRead(app, `/portal/${id}/changelog?limit=40`)
  t.teardown(() => stalled.destroy())
  await until(() => budget.held() > 20_000_000)
  t.pass('the page is being sent, its HTML held')
  await until(() => budget.held() === 0)
  t.pass('the server closed the stalled connection, and the HTML was given back')
})

t.test("an API page a client stops reading holds its JSON until its connection closes; meanwhile other large reads are a 503, and writes are not", async (t) => {
  const budget = bodyBudget(1)
  const app = await testApp({}, { bodyBudgets: { api: budget } })
  const { id, key } = await largeChangelogProject()
  const send = await overHttp(app)
  const draft = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Large draft', body: 'x'.repeat(100_000) } })
  const { etag } = (await call(t, app, { url: `/v1/changelog/${draft.json.data.id}`, key })).headers
  const stalled = stalledRead(app, '/v1/events?limit=40', { key })
  await until(() => budget.held() > 5_000_000)
  t.pass('the page of events is being sent, its text held')

  const authorization = `Bearer ${key}`
  t.equal((await send({ path: `/portal/${id}/changelog.json` })).status, 200, 'the portal has a budget of its own')
  for (const path of ['/v1/events?limit=40', '/v1/changelog?limit=40']) {
    const refused = await send({ path, headers: { authorization } })
    t.same([refused.status, refused.headers['retry-after'], JSON.parse(refused.body).code], [503, '5', 'unavailable'], `GET ${path}: beyond the budget`)
    t.same([refused.headers.etag, refused.headers['cache-control']], [undefined, undefined], 'without the tag or the caching of the answer it replaces')
    t.same(specProblems('GET', path, { statusCode: refused.status, headers: refused.headers, body: refused.body }), [], 'as openapi.yaml documents it')
  }
  const small = await call(t, app, { url: '/v1/beta/programs', key })
  t.equal(small.status, 200, `a small answer (under ${COUNTED_BODY_BYTES} bytes) is not counted`)
  const written = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${draft.json.data.id}`, key, body: { title: 'Large draft, retitled' } })
  t.equal(written.status, 200, "a write's large answer is sent whatever is held: its change is made")
  t.equal((await call(t, app, { url: `/v1/changelog/${draft.json.data.id}`, key, headers: { 'if-none-match': written.headers.etag as string } })).status, 304, 'a 304 sends nothing, so takes nothing')
  t.not(written.headers.etag, etag, 'of the entry as written')

  stalled.destroy()
  await until(() => budget.held() === 0)
  t.pass('the stalled page gave its text back once its connection closed')
  const events = await call(t, app, { url: '/v1/events?limit=40', key })
  t.same([events.status, events.json.data.length], [200, 40], 'then the page of events is sent')
  t.equal(budget.held(), 0, 'and its text given back once sent')
})

t.test('a page of large values takes its bytes before it is read, and holds what it sends until it is sent', async (t) => {
  // Records what each take asks for: the bytes of the values the repository withheld, before it
  // reads them, or (for a body read at once) the answer's own.
  const asked: number[] = []
  const budget = bodyBudget(1_000_000)
  const recording: BodyBudget = { take: (bytes, client) => (asked.push(bytes), budget.take(bytes, client)), held: budget.held }
  const app = await testApp({}, { bodyBudgets: { api: recording } })
  const { key } = await createProject({ plan: 'pro' })
  // Oldest first: a body of exactly INLINE_VALUE_BYTES (read at once), then one of a byte more
  // (in two-byte characters: sizes are bytes, not characters), then one of quotes.
  const bodies = ['x'.repeat(INLINE_VALUE_BYTES), 'é'.repeat(INLINE_VALUE_BYTES / 2 + 1), '"'.repeat(COUNTED_BODY_BYTES)]
  for (const body of bodies) {
    t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Sized', body, status: 'published' } })).status, 201)
  }
  // What the withheld bodies take as sent, escaped as JSON strings (a quote is two bytes); a small
  // one, read with its page, is counted with the rest of the answer once written.
  const withheld = bodies.filter((body) => Buffer.byteLength(body) > INLINE_VALUE_BYTES)
  const estimate = withheld.reduce((bytes, body) => bytes + Buffer.byteLength(JSON.stringify(body)) - 2, 0)

  const inline = await call(t, app, { url: '/v1/changelog?limit=1&offset=2', key })
  t.same([inline.status, inline.json.data[0].body], [200, bodies[0]], `a body of ${INLINE_VALUE_BYTES} bytes is read with its page`)
  t.same(asked, [], 'and nothing is taken for a small page')

  const whole = await call(t, app, { url: '/v1/changelog?limit=3', key })
  t.same(whole.json.data.map((entry: { body: string }) => entry.body), [...bodies].reverse(), 'the page has every body whole')
  t.same([whole.headers['content-length'], whole.headers['transfer-encoding']], [String(Buffer.byteLength(whole.raw)), undefined], 'sent in slices, with its length')
  t.same(asked, [estimate], "its bodies' bytes as sent were taken before they were read (not its answer's, once written)")
  t.equal(budget.held(), 0, 'and given back once it was sent')

  const events = await call(t, app, { url: '/v1/events?type=changelog_entry.published', key })
  const records = events.json.data.map((event: { data: unknown }) => Buffer.byteLength(JSON.stringify(event.data)))
  t.same(asked.slice(1), [records.reduce((a: number, b: number) => a + b, 0)], "a page of events takes its records' bytes the same way")

  // Another client holds the whole budget: the page is refused before its bodies are read.
  const other = budget.take(1_000_000, 'another key')
  t.teardown(other.release)
  const refused = await call(t, app, { url: '/v1/changelog?limit=3', key })
  t.same([refused.status, refused.json.code, refused.headers['retry-after']], [503, 'unavailable', '5'], 'a 503 with Retry-After')
  t.equal(asked.at(-1), estimate, "refused on its bodies' bytes, before reading them")
  t.equal((await call(t, app, { url: '/v1/changelog?limit=1&offset=2', key })).status, 200, 'a page without large values is still read')
  t.equal(budget.held(), 1_000_000, 'nothing left held by the refused page')
})

t.test('a page holds its bytes until its answer is written, even once its client is gone; a client gone first takes nothing', async (t) => {
  const events: string[] = []
  let hangUp = () => {}
  const budget = bodyBudget()
  const recording: BodyBudget = {
    held: budget.held,
    take(bytes, client) {
      const hold = budget.take(bytes, client)
      events.push('take')
      hangUp()
      return { release: () => (events.push('release'), hold.release()), resize: (to) => (events.push('resize'), hold.resize(to)) }
    },
  }
  const app = await testApp({}, { bodyBudgets: { api: recording } })
  const { key } = await largeChangelogProject()
  await overHttp(app)
  const { port } = app.server.address() as { port: number }
  const client = connect(port, '127.0.0.1', () => client.write(`GET /v1/changelog?limit=40 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`))
  client.on('error', () => {})
  hangUp = () => client.destroy()
  await until(() => events.includes('release'))
  // Given back at the hang-up, the page would still be read and written while held by nobody
  // (found by an outside review).
  t.same(events, ['take', 'resize', 'release'], 'taken, then the answer written, then given back')

  // Gone before the page's bytes are asked for: refused, nothing read, nothing held.
  const ended: string[] = []
  const app2 = await testApp(
    {},
    {
      bodyBudgets: { api: budget },
      handlers: {
        listChangelogEntries: readByKey<'listChangelogEntries'>(async (request, ctx) => {
          // The page is read only once the client has hung up.
          const closed = new Promise((resolve) => request.socket.once('close', resolve))
          ended.push('started')
          await closed
          try {
            const reply = await (listChangelogEntries as unknown as KeyScopedHandler<'listChangelogEntries'>)(request, ctx)
            ended.push('read whole')
            return reply
          } catch (error) {
            ended.push((error as Error).message)
            throw error
          }
        }),
      },
    },
  )
  await overHttp(app2)
  const { port: port2 } = app2.server.address() as { port: number }
  const early = connect(port2, '127.0.0.1', () => early.write(`GET /v1/changelog?limit=40 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`))
  early.on('error', () => {})
  await until(() => ended.length > 0)
  early.destroy()
  await until(() => ended.length > 1)
  t.same(ended, ['started', 'The client went away.'], 'the page was not read whole')
  t.equal(budget.held(), 0, 'and nothing is held')
})

t.test("an answer written larger than its page's hold, with no room for the rest, is a 503 that gives the hold back once", async (t) => {
  // The hold covers the withheld body; the ten small ones (read with the page) and the other
  // fields are counted once the answer is written (src/db/repos/large-values.ts).
  const events: string[] = []
  const budget = bodyBudget(200_000)
  const recording: BodyBudget = {
    held: budget.held,
    take(bytes, client) {
      const hold = budget.take(bytes, client)
      events.push(`take ${bytes}`)
      return {
        release: () => (events.push('release'), hold.release()),
        resize: (to) => {
          try {
            hold.resize(to)
            events.push('resize')
          } catch (error) {
            events.push('resize refused')
            throw error
          }
        },
      }
    },
  }
  const app = await testApp({ adminToken: ADMIN_TOKEN }, { bodyBudgets: { api: recording } })
  const { key } = await createProject({ plan: 'pro' })
  for (const body of ['x'.repeat(70_000), ...Array.from({ length: 10 }, () => 'y'.repeat(8_000))]) {
    t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Sized', body, status: 'published' } })).status, 201)
  }
  const other = budget.take(100_000, 'another key')
  t.teardown(other.release)
  const refused = await call(t, app, { url: '/v1/changelog', key })
  t.same([refused.status, refused.json.code, refused.headers['retry-after']], [503, 'unavailable', '5'], 'a 503 with Retry-After')
  t.same(events, ['take 70000', 'resize refused', 'resize', 'release'], 'held for the withheld body, refused once written, the problem sent instead gives the hold back once')
  t.equal(budget.held(), 100_000, 'nothing left held by it')
  t.equal(value(await scrape(t, app), 'http_busy_total', { reason: 'large_answers' }), 1, 'counted as busy')
})

t.test('openapi.yaml and the README give the budgets and the size they count from', async (t) => {
  const mebibytes = BODY_BUDGET / 1024 / 1024
  const conventions = (source.tags as { name: string; description: string }[]).find((tag) => tag.name === 'conventions')!.description.replace(/\s+/g, ' ')
  t.match(conventions, `at most ${mebibytes} MiB of the API's large answers (${COUNTED_BODY_BYTES / 1024} KiB and more`, 'the conventions tag')
  t.match(conventions, `and ${mebibytes} MiB of the portal's pages and feeds`, 'the portal budget')
  t.match(conventions, 'one client (an API key; on the portal, an address) at most a quarter of either', 'and the share of one client')
  t.equal(CLIENT_SHARE, 1 / 4, 'which is a quarter')
  t.match(conventions, `holding a record or body of more than ${INLINE_VALUE_BYTES / 1024} KiB is counted by the size of what it holds before that is read`, 'and pages counted before they are read')
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')
  t.match(readme, `(${COUNTED_BODY_BYTES / 1024} KiB and more: the API's pages of events or long changelog entries) have a budget of ${mebibytes} MiB being sent per instance, and the portal's pages and feeds (of the same size) another, of which one client (an API key, or a portal visitor's address) may hold a quarter`, 'the README')
  t.match(readme, `first read with every record or body of more than ${INLINE_VALUE_BYTES / 1024} KiB left out`, 'and on pages counted before they are read')
  const rate = `at least ${MIN_SEND_RATE / 1024} KiB a second over every ${SEND_WINDOW_MS / 1000} s`
  t.match(readme, `must move ${rate}, or its connection is closed`, 'and on the least a large answer must move')
  t.match(conventions, `A large answer must move ${rate}, or its connection is closed`, 'in both')
})

t.test('pipelined reads a client stops reading give their bytes back when the connection closes, the queued ones too', async (t) => {
  // Node closes only the response being written when a connection goes; the ones queued behind
  // it never emit 'close', and their bytes were held for ever (found by an outside review).
  const budgets = { api: bodyBudget(), portal: bodyBudget() }
  const app = await testApp({}, { bodyBudgets: budgets })
  const { id, key } = await largeChangelogProject()
  await overHttp(app)
  // Within one client's share (a quarter of 100 MiB): three pages of events, two of the portal.
  // The first may be all in the kernel's buffers, so sent; the ones queued behind it are held.
  for (const [budget, path, bearer, each, times] of [
    [budgets.api, '/v1/events?limit=40', key, 7_500_000, 3],
    [budgets.portal, `/portal/${id}/changelog?limit=20`, undefined, 11_000_000, 2],
  ] as const) {
    const stalled = stalledRead(app, path, { key: bearer, times })
    await until(() => budget.held() > (times - 1) * each)
    t.pass(`GET ${path} ${times} times on one connection: those queued held`)
    stalled.destroy()
    await until(() => budget.held() === 0)
    t.pass('all given back once the connection closed')
  }
})

t.test('a client that reads a large answer too slowly has its connection closed, and what it held given back', async (t) => {
  const budgets = { api: bodyBudget(), portal: bodyBudget() }
  // The checks run when the test says: a window is however long the test waits between two.
  const app = await testApp({}, { bodyBudgets: budgets, sendWatch: { minBytes: 1_000_000, windowMs: undefined } })
  const { id, key } = await largeChangelogProject()
  await overHttp(app)
  for (const [budget, path, bearer] of [
    [budgets.portal, `/portal/${id}/changelog?limit=40`, undefined],
    [budgets.api, '/v1/events?limit=40', key],
  ] as const) {
    // Twice on one connection, so that more is waiting than the kernel's buffers take.
    const stalled = stalledRead(app, path, { key: bearer, times: 2 })
    await until(() => budget.held() > 5_000_000)
    // The kernel's buffers take what they can at once; once they are full, nothing moves, and the
    // next check closes the connection, long before the stall timeout (a minute).
    while (budget.held() > 0) {
      app.sendWatch.check()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    t.pass(`GET ${path}, not read: its bytes given back`)
    const closed = new Promise((resolve) => stalled.once('close', resolve))
    stalled.resume()
    await closed
    t.pass('its connection closed by the server')
  }
  t.match(await app.metrics.text(), /^http_slow_answers_closed_total 2$/m, 'each connection counted once in the metrics')
})

t.test("a client's share is counted by its API key, or on the portal by its address", async (t) => {
  const budgets = { api: bodyBudget(40_000_000), portal: bodyBudget() }
  const app = await testApp({ trustProxy: ['127.0.0.1'] }, { bodyBudgets: budgets })
  const { id, key } = await largeChangelogProject()
  const send = await overHttp(app)
  const stalled = stalledRead(app, '/v1/events?limit=40', { key })
  t.teardown(() => stalled.destroy())
  await until(() => budgets.api.held() > 5_000_000)
  const again = await send({ path: '/v1/events?limit=40', headers: { authorization: `Bearer ${key}` } })
  t.same([again.status, JSON.parse(again.body).detail], [503, 'Too many large answers are being sent to you right now; read them, then retry.'], 'the same key, beyond its share')

  // On the portal, by the address a trusted proxy forwards: a 24 MB page is past a quarter of 100 MiB.
  const visitor = stalledRead(app, `/portal/${id}/changelog?limit=40`, { forwardedFor: '203.0.113.7' })
  t.teardown(() => visitor.destroy())
  await until(() => budgets.portal.held() > 20_000_000)
  const page = (address: string) => send({ path: `/portal/${id}/changelog?limit=40`, headers: { 'x-forwarded-for': address } })
  t.equal((await page('203.0.113.7')).status, 503, 'the same address, beyond its share')
  t.equal((await page('198.51.100.9')).status, 200, 'another address has a share of its own')
})

t.test('many large answers pipelined on one connection add one listener to it, not one each', async (t) => {
  const warnings: string[] = []
  const onWarning = (warning: Error) => warnings.push(warning.name)
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  const budget = bodyBudget()
  const app = await testApp({}, { bodyBudgets: { api: budget } })
  const { key } = await largeChangelogProject()
  await overHttp(app)
  // Twelve answers of 1 MB, most of them queued: Node warns past ten listeners of one event on one emitter.
  const stalled = stalledRead(app, '/v1/events?limit=5', { key, times: 12 })
  await until(() => budget.held() > 6_000_000)
  stalled.destroy()
  await until(() => budget.held() === 0)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(warnings, [], 'no MaxListenersExceededWarning')
})

t.test('answers outside the budgets (/docs/\'s script, the documents) are sent in slices too: a client that stops reading is cut off', async (t) => {
  // Found by an attacker review: /docs/js/scalar.js (3 MB, no key, no rate limit) was written
  // whole to every connection, and six hundred that never read it held 6 GB of the heap.
  const app = await testApp({}, { sendWatch: { minBytes: 1_000_000, windowMs: undefined } })
  await overHttp(app)
  // A plugin's asset, outside the spec (test/http/routes.test.ts): asked for without the spec check.
  const whole = await app.inject({ url: '/docs/js/scalar.js' })
  t.equal(whole.statusCode, 200)
  t.ok(whole.rawPayload.length > 1_000_000, 'a large script')
  t.equal(Number(whole.headers['content-length']), whole.rawPayload.length, 'sent whole, with its length, to a client that reads it')

  // Four times on one connection: more than the kernel's buffers take.
  const stalled = stalledRead(app, '/docs/js/scalar.js', { times: 4 })
  while (!/^http_slow_answers_closed_total 1$/m.test(await app.metrics.text())) {
    app.sendWatch.check()
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const closed = new Promise((resolve) => stalled.once('close', resolve))
  stalled.resume()
  await closed
  t.pass('its connection closed by the server')
})
