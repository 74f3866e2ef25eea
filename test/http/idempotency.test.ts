// Idempotency-Key on POST: replay of the stored 2xx, one row written, 422 for another body,
// 409 while the first still runs, nothing kept for failures, keys scoped per project.
import { createHash } from 'node:crypto'
import t from 'tap'
import { appWithRepos, call, createProject, testApp } from '../helpers/app.js'
import { ADMIN_TOKEN } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { overHttp } from '../helpers/over-http.js'
import { sql } from 'drizzle-orm'
import { rowsOf } from '../../src/db/results.js'
import { ApiError } from '../../src/http/errors.js'
import { MarkdownRenderer } from '../../src/portal/markdown-rendering.js'
import { isIdempotencyKey } from '../../src/http/idempotency.js'
import { AJV_OPTIONS } from '../../src/http/validation.js'
import { spec } from '../helpers/spec-check.js'
import { Ajv2020 } from 'ajv/dist/2020.js'

t.test("the key's rule is the spec's IdempotencyKey parameter's", async (t) => {
  const { schema } = (spec as { components: { parameters: Record<string, { schema: object }> } }).components.parameters.IdempotencyKey!
  const bySpec = new Ajv2020({ ...AJV_OPTIONS }).compile(schema)
  const samples = ['', 'a', ' ', '~', 'x'.repeat(255), 'x'.repeat(256), 'é', '\x7f', '\t', 'a\u0000', '8b0c6c1e-5a55-4e0b-9d0e-1f6b6f0a1c2d', '😀']
  for (const sample of samples) t.equal(isIdempotencyKey(sample), bySpec(sample), JSON.stringify(sample.length > 20 ? `${sample.slice(0, 5)}… (${sample.length})` : sample))
})

t.test('a retry with the same key and body replays the answer and writes nothing', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const headers = { 'idempotency-key': 'create-dark-mode-1' }
  const body = { title: 'Dark mode', status: 'published' }
  const first = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body, headers })
  t.equal(first.status, 201)
  t.notOk(first.headers['idempotency-replayed'])
  const retry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body, headers })
  t.equal(retry.status, 201)
  t.equal(retry.headers['idempotency-replayed'], 'true')
  t.equal(retry.raw, first.raw, 'the very same body')
  t.equal(retry.headers.location, first.headers.location)
  const list = await call(t, app, { url: '/v1/changelog', key })
  t.equal(list.json.data.length, 1, 'one entry written')
})

t.test('the same request written otherwise is the same request: members in another order, an escaped path, a bare ?', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const url = '/v1/changelog'
  const headers = { 'idempotency-key': 'member-order', 'content-type': 'application/json' }
  const first = await call(t, app, { method: 'POST', url, key, headers, body: '{"title":"A","body":"b","labels":["x","y"],"version":"1.0.0"}' })
  t.equal(first.status, 201)
  for (const [what, sent] of [
    ['members in another order', { url, body: '{"version":"1.0.0","labels":["x","y"],"body":"b","title":"A"}' }],
    ['the path with an escape', { url: '/v1/%63hangelog', body: '{"title":"A","body":"b","labels":["x","y"],"version":"1.0.0"}' }],
    ['a bare ? after the path, and white space', { url: `${url}?`, body: '{ "labels" : [ "x", "y" ], "title" : "A", "body" : "b", "version" : "1.0.0" }' }],
  ] as const) {
    const retry = await call(t, app, { method: 'POST', key, headers, ...sent })
    t.same([retry.status, retry.headers['idempotency-replayed'], retry.raw], [201, 'true', first.raw], `${what}: replayed`)
  }
  const reordered = await call(t, app, { method: 'POST', url, key, headers, body: '{"title":"A","body":"b","labels":["y","x"],"version":"1.0.0"}' })
  t.same([reordered.status, reordered.json.code], [422, 'idempotency_key_reused'], "an array's order is the value's: another request")
  t.equal((await call(t, app, { url: `${url}?status=all`, key })).json.data.length, 1, 'one entry written')
})

t.test('a key is stored as versions before 1.2.6 compare it, and a key they stored replays here', async (t) => {
  // A rolling deploy runs both at once: a retry sent byte for byte replays on either, whichever
  // stored its key (a version that compared only its own hash was told 422: found by a review).
  const app = await testApp()
  const { key, id } = await createProject()
  const body = { title: 'Stored before', body: 'b' }
  const first = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body, headers: { 'idempotency-key': 'sent-hash' } })
  const { db } = await testDatabase()
  const stored = async () => rowsOf<{ request_hash: string }>(await db.execute(sql`select request_hash from idempotency_keys where scope = ${id} and key = 'sent-hash'`))[0]!
  const sent = createHash('sha256').update(`POST /v1/changelog\n${JSON.stringify(body)}`).digest('hex')
  t.equal((await stored()).request_hash, sent, 'its request_hash: what such a version compares')

  // As such a version stores a key: without the value's hash.
  await db.execute(sql`update idempotency_keys set request_value_hash = null where scope = ${id} and key = 'sent-hash'`)
  const retry = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body, headers: { 'idempotency-key': 'sent-hash' } })
  t.same([retry.status, retry.headers['idempotency-replayed'], retry.raw], [201, 'true', first.raw], "such a version's key: replayed to the very same request")
  const other = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { ...body, title: 'Another' }, headers: { 'idempotency-key': 'sent-hash' } })
  t.equal(other.status, 422, 'and another request is still another')
})

t.test("a key such a version took over after its 24 hours is that version's request's, not the first one's", async (t) => {
  // Taking over an expired key, it rewrites request_hash and the answer and leaves
  // request_value_hash as it was: the first request, sent again, was replayed the other's answer.
  const app = await testApp()
  const { key, id } = await createProject()
  const first = { title: 'First', body: 'f' }
  await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: first, headers: { 'idempotency-key': 'taken-over' } })
  const { db } = await testDatabase()
  const otherSent = createHash('sha256').update(`POST /v1/changelog\n${JSON.stringify({ title: 'Other', body: 'o' })}`).digest('hex')
  await db.execute(sql`update idempotency_keys set request_hash = ${otherSent}, response_body = '{"taken":"over"}' where scope = ${id} and key = 'taken-over'`)
  const again = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: first, headers: { 'idempotency-key': 'taken-over' } })
  t.same([again.status, again.json.code], [422, 'idempotency_key_reused'])
})

t.test('the same key with another body is 422; concurrent duplicates write one row', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const headers = { 'idempotency-key': 'k-422' }
  await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'One' }, headers })
  const other = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Two' }, headers })
  t.equal(other.status, 422)
  t.equal(other.json.code, 'idempotency_key_reused')

  const parallel = await Promise.all(
    Array.from({ length: 10 }, () => call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Raced' }, headers: { 'idempotency-key': 'k-race' } })),
  )
  const statuses = parallel.map((r) => r.status)
  t.ok(statuses.every((s) => s === 201 || s === 409), `201 or 409 only: ${statuses.join(',')}`)
  t.ok(parallel.filter((r) => r.status === 409).every((r) => r.json.code === 'idempotency_in_progress'))
  const programs = await call(t, app, { url: '/v1/beta/programs?limit=100', key })
  t.equal(programs.json.data.filter((p: { name: string }) => p.name === 'Raced').length, 1, 'one program written')
})

t.test('failures are not stored: a retry after a 4xx runs again', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const headers = { 'idempotency-key': 'k-fail' }
  const invalid = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: '' }, headers })
  t.equal(invalid.status, 400)
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Closed', status: 'closed' } })
  const closed = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: 'a@b.co' }, headers: { 'idempotency-key': 'k-closed' } })
  t.equal(closed.status, 409)
  await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${program.json.data.id}`, key, body: { status: 'active' } })
  const retried = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: 'a@b.co' }, headers: { 'idempotency-key': 'k-closed' } })
  t.equal(retried.status, 201, 'the retry ran once the program reopened')
  t.notOk(retried.headers['idempotency-replayed'])
  const valid = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'ok' }, headers })
  t.equal(valid.status, 201, 'a key whose request failed validation is free')
})

t.test('keys are per project, and malformed keys are 400', async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  const headers = { 'idempotency-key': 'shared-name' }
  const ra = await call(t, app, { method: 'POST', url: '/v1/changelog', key: a.key, body: { title: 'A' }, headers })
  const rb = await call(t, app, { method: 'POST', url: '/v1/changelog', key: b.key, body: { title: 'A' }, headers })
  t.equal(rb.status, 201)
  t.notOk(rb.headers['idempotency-replayed'], "another project's key of the same name is unrelated")
  t.not(rb.json.data.id, ra.json.data.id)
  for (const bad of ['', 'x'.repeat(256), 'tab\tkey', 'é']) {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key: a.key, body: { title: 'A' }, headers: { 'idempotency-key': bad } })
    t.equal(res.status, 400, JSON.stringify(bad).slice(0, 20))
    t.equal(res.json.errors[0].in, 'header')
  }
  const max = await call(t, app, { method: 'POST', url: '/v1/changelog', key: a.key, body: { title: 'A' }, headers: { 'idempotency-key': 'k'.repeat(255) } })
  t.equal(max.status, 201)
})

t.test('the operator API ignores Idempotency-Key: its answers hold secrets that are never stored', async (t) => {
  const app = await testApp()
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'idempotency-key': 'admin-key' }
  const first = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers, body: { name: 'Twice' } })
  const second = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers, body: { name: 'Twice' } })
  t.notOk(second.headers['idempotency-replayed'])
  t.not(second.json.data.id, first.json.data.id)
  const { db } = await testDatabase()
  const stored = await db.execute(sql`select count(*)::int as n from idempotency_keys where response_body like ${'%' + first.json.api_key + '%'}`)
  t.equal((stored as unknown as { rows?: { n: number }[] }).rows?.[0]?.n ?? (stored as unknown as { n: number }[])[0]?.n, 0, 'no API key in the idempotency table')
})

t.test('an Idempotency-Key sent twice is a 400, though Node joins the two into one value', async (t) => {
  // "a" and "b" arrive as "a, b", a valid key of its own: the request ran under it (found by an
  // outside review). Over a real connection, since the injector sends one header line.
  const send = await overHttp(await testApp({ adminToken: ADMIN_TOKEN }))
  const { key } = await createProject()
  const post = async (keys: string[]) => {
    const answer = await send({
      method: 'POST',
      path: '/v1/beta/programs',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': keys },
      body: JSON.stringify({ name: 'Twice' }),
    })
    return { status: answer.status, body: answer.body }
  }
  const twice = await post(['a', 'b'])
  t.equal(twice.status, 400)
  t.match(JSON.parse(twice.body), { code: 'validation_failed', errors: [{ in: 'header', path: '/Idempotency-Key' }] })
  t.equal((await post(['a, b'])).status, 201, 'the same text sent once is a key')
})

t.test("a write under a key renders its body before the key's transaction opens, so it holds no connection while it waits", async (t) => {
  // A renderer that answers when the test says so: the write waits in its render meanwhile.
  let rendering!: () => void
  const started = new Promise<void>((resolve) => (rendering = resolve))
  let finish!: () => void
  const finished = new Promise<void>((resolve) => (finish = resolve))
  class HeldRenderer extends MarkdownRenderer {
    override async render(source: string): Promise<string> {
      rendering()
      await finished
      return `<p>${source}</p>\n`
    }
  }
  const app = await testApp({}, { markdown: new HeldRenderer() })
  const [writer, reader] = [await createProject(), await createProject()]
  const write = call(t, app, { method: 'POST', url: '/v1/changelog', key: writer.key, body: { title: 'Held', body: 'held' }, headers: { 'idempotency-key': 'held-render' } })
  await started
  // The embedded database has one connection: a transaction opened before the render would hold
  // it, and this read would wait for the render (for ever, here).
  t.equal((await call(t, app, { url: '/v1/changelog?status=all', key: reader.key })).status, 200, "another project's read is answered while the write waits")
  finish()
  const written = await write
  t.same([written.status, written.json.data.title], [201, 'Held'], 'then the write is made')
  const replayed = await call(t, app, { method: 'POST', url: '/v1/changelog', key: writer.key, body: { title: 'Held', body: 'held' }, headers: { 'idempotency-key': 'held-render' } })
  t.same([replayed.status, replayed.headers['idempotency-replayed'], replayed.json.data.id], [201, 'true', written.json.data.id], 'and replayed under its key')
})

t.test('a replay answers from its key before anything is prepared: it renders nothing, and a full render line does not refuse it', async (t) => {
  // A renderer that counts its renders, and refuses them all once full (as a project's full line does).
  class CountingRenderer extends MarkdownRenderer {
    renders = 0
    full = false
    override async render(source: string): Promise<string> {
      this.renders++
      if (this.full) throw new ApiError('unavailable', 'The line is full.', { headers: { 'retry-after': '1' }, busy: 'renders' })
      return `<p>${source}</p>\n`
    }
  }
  const renderer = new CountingRenderer()
  const app = await testApp({}, { markdown: renderer })
  const { key } = await createProject()
  const entry = { method: 'POST', url: '/v1/changelog', key, body: { title: 'Once', body: 'once' }, headers: { 'idempotency-key': 'replay-first' } } as const
  const written = await call(t, app, entry)
  t.same([written.status, renderer.renders], [201, 1], 'written, its body rendered once')
  renderer.full = true
  const replayed = await call(t, app, entry)
  t.same([replayed.status, replayed.headers['idempotency-replayed'], replayed.json.data.id], [201, 'true', written.json.data.id], 'replayed while no render is possible')
  t.equal((await call(t, app, { ...entry, body: { title: 'Other', body: 'other' } })).status, 422, 'the key with another body is still a 422')
  t.equal(renderer.renders, 1, 'neither rendered anything')
  t.equal((await call(t, app, { ...entry, headers: { 'idempotency-key': 'replay-second' } })).status, 503, 'a new key is refused, the line being full')
})

t.test('a replay whose transaction does not commit is a 503 that does not say it replayed', async (t) => {
  // The replay's headers were set inside the key's transaction, and kept on the 503 its failed
  // COMMIT became: a client reading Idempotency-Replayed as "done" took the 503 for the write
  // (found by a review that cut the COMMIT's answer). Here the transaction fails as it ends.
  let failNext = false
  const app = await appWithRepos(t, (repos) => {
    const transaction = repos.transaction.bind(repos)
    repos.transaction = (async (work: never) => {
      const done = await transaction(work)
      if (!failNext) return done
      failNext = false
      throw Object.assign(new Error('connection lost during COMMIT'), { code: '08006' })
    }) as typeof repos.transaction
  })
  const { key } = await createProject()
  const post = (url: string, body: object) => call(t, app, { method: 'POST', url, key, body, headers: { 'idempotency-key': `k-commit-${url}` } })
  for (const [url, body] of [
    ['/v1/changelog', { title: 'Once' }],
    // An answer that shows a secret is replayed by another branch.
    ['/v1/webhook-endpoints', { url: 'https://hooks.example.com/x' }],
  ] as const) {
    t.equal((await post(url, body)).status, 201, `${url}: stored`)
    failNext = true
    const failed = await post(url, body)
    t.equal(failed.status, 503, `${url}: the commit failed`)
    t.notOk(failed.headers['idempotency-replayed'], `${url}: no Idempotency-Replayed on the 503`)
    t.notOk(failed.headers.location, `${url}: nor a Location`)
    const replay = await post(url, body)
    t.same([replay.status, replay.headers['idempotency-replayed']], [201, 'true'], `${url}: the next retry replays`)
  }
})
