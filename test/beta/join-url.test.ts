// join_url: every tester record the API returns carries the tester's join link when the
// deployment sets PUBLIC_BASE_URL, built on that setting and never on the request's Host.
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { call, createProject, testApp } from '../helpers/app.js'

const BASE = 'https://feedback.example.com'
/** What a client (or a proxy that passes them on) may claim as the host; none may reach a link. */
const FORGED = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http', forwarded: 'host=evil.example' }

/** Every operation that returns a tester, in an order that exercises each (list and GET, both PATCH directions). */
async function everyTesterAnswer(t: Test, app: FastifyInstance) {
  const { key } = await createProject()
  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: object) => call(t, app, { method, url, key, body, headers: FORGED })
  const program = (await send('POST', '/v1/beta/programs', { name: 'Links', status: 'active' })).json.data
  const testers = `/v1/beta/programs/${program.id}/testers`
  const created = await send('POST', testers, { email: 'ada@example.com' })
  t.equal(created.status, 201)
  const id = created.json.data.id as string
  const answers = {
    'POST (201, new)': created,
    'POST (200, existing)': await send('POST', testers, { email: 'Ada@Example.com' }),
    GET: await send('GET', `${testers}/${id}`),
    'PATCH revoke': await send('PATCH', `${testers}/${id}`, { status: 'revoked' }),
    'PATCH restore': await send('PATCH', `${testers}/${id}`, { status: 'invited' }),
    'PATCH empty': await send('PATCH', `${testers}/${id}`, {}),
  }
  for (const [what, res] of Object.entries(answers)) t.ok(res.status === 200 || res.status === 201, `${what} → ${res.status}`)
  const list = await send('GET', `${testers}?limit=10`)
  t.equal(list.status, 200)
  return { token: created.json.data.token as string, answers, list }
}

t.test('with PUBLIC_BASE_URL, every tester record has join_url on that base, whatever the Host', async (t) => {
  const app = await testApp({ publicBaseUrl: BASE })
  const { token, answers, list } = await everyTesterAnswer(t, app)
  const expected = `${BASE}/beta/join?token=${token}`
  for (const [what, res] of Object.entries(answers)) {
    t.equal(res.json.data.join_url, expected, `${what}: join_url`)
    t.notMatch(res.raw, /evil\.example/, `${what}: nothing from the forged Host`)
  }
  t.same(list.json.data.map((x: { join_url: string }) => x.join_url), [expected], 'list: join_url')
  t.notMatch(list.raw, /evil\.example/, 'list: nothing from the forged Host')

  // The link is the join page's: followed on this server, it opens the tester's invitation.
  const link = new URL(expected)
  const page = await call(t, app, { url: link.pathname + link.search })
  t.equal(page.status, 200, 'join_url opens the join page')
})

t.test('without PUBLIC_BASE_URL, join_url is null on every tester record (never guessed from Host)', async (t) => {
  const app = await testApp()
  const { answers, list } = await everyTesterAnswer(t, app)
  for (const [what, res] of Object.entries(answers)) {
    t.equal(res.json.data.join_url, null, `${what}: join_url is null`)
    t.notMatch(res.raw, /evil\.example/, `${what}: nothing from the forged Host`)
  }
  t.same(list.json.data.map((x: { join_url: unknown }) => x.join_url), [null], 'list: join_url is null')
})

t.test("a tester's ETag covers join_url: a new PUBLIC_BASE_URL is a new representation, and If-Match holds to it", async (t) => {
  const before = await testApp()
  const after = await testApp({ publicBaseUrl: BASE })
  const { key } = await createProject()
  const program = (await call(t, before, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Tags', status: 'active' } })).json.data
  const tester = (await call(t, before, { method: 'POST', url: `/v1/beta/programs/${program.id}/testers`, key, body: { email: 'tag@example.com' } })).json.data
  const url = `/v1/beta/programs/${program.id}/testers/${tester.id}`
  const old = await call(t, before, { url, key })
  const oldTag = old.headers.etag as string

  // A client that cached the record without join_url must not be told it is still current.
  const fresh = await call(t, after, { url, key, headers: { 'if-none-match': oldTag } })
  t.equal(fresh.status, 200, 'the old tag does not revalidate the new representation')
  t.equal(fresh.json.data.join_url, `${BASE}/beta/join?token=${tester.token}`)
  const newTag = fresh.headers.etag as string
  t.not(newTag, oldTag, 'another tag')
  t.equal((await call(t, after, { url, key, headers: { 'if-none-match': newTag } })).status, 304, 'the new tag revalidates')

  // The tag a write compares is the tag the client read, on each deployment.
  t.equal((await call(t, after, { method: 'PATCH', url, key, headers: { 'if-match': oldTag }, body: { status: 'revoked' } })).status, 412, 'the old tag is stale')
  const patched = await call(t, after, { method: 'PATCH', url, key, headers: { 'if-match': newTag }, body: { status: 'revoked' } })
  t.equal(patched.status, 200, 'the tag just read matches')
  t.equal(patched.json.data.status, 'revoked')
})
