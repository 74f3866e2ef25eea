// The join page and its answers: every state a tester can be in, as a person sees it.
import { Writable } from 'node:stream'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { rowsOf } from '../../src/db/results.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { FORM, answer, codes, form, programWithTester } from './beta-helpers.js'

t.test('an invited tester sees the program and the two buttons, and nothing of the access details', async (t) => {
  const app = await testApp()
  const { token } = await programWithTester(t, app, { feedback_deadline: '2030-01-01T12:00:00Z' })
  const res = await call(t, app, { url: `/beta/join?token=${token}` })
  t.equal(res.status, 200)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.headers['referrer-policy'], 'no-referrer')
  t.match(res.headers['content-security-policy'], /frame-ancestors 'none'/)
  t.match(res.raw, /<h1>Mobile beta<\/h1>/)
  t.match(res.raw, /Version 2\.1\.0-beta\.1/)
  t.match(res.raw, /The new editor\./)
  t.match(res.raw, /Feedback until 2030-01-01 12:00 UTC/)
  t.match(res.raw, /name="action" value="accept"/)
  t.match(res.raw, /name="action" value="decline"/)
  t.match(res.raw, /<meta name="viewport"/, 'phone-friendly')
  t.notMatch(res.raw, /beta\.example\.com|Install the app/, 'no access details before joining')
  t.notMatch(res.raw, /<script/i)
})

t.test('every program value is HTML-escaped', async (t) => {
  const app = await testApp()
  const evil = '<script>alert("x")</script>&\''
  const { token } = await programWithTester(t, app, { name: evil, summary: evil, access_instructions: evil, access_url: 'https://example.com/?a=1&b=2' })
  const invited = await call(t, app, { url: `/beta/join?token=${token}` })
  t.notMatch(invited.raw, /<script>/)
  t.match(invited.raw, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;&amp;&#39;/)
  const joined = await answer(t, app, token, 'accept')
  t.notMatch(joined.raw, /<script>/)
  t.match(joined.raw, /href="https:\/\/example\.com\/\?a=1&amp;b=2"/)
})

t.test('accept joins: joined_at and an eu_ end user, the access details, and the same page again', async (t) => {
  const app = await testApp()
  const { key, token, testerUrl } = await programWithTester(t, app)
  const res = await answer(t, app, token, 'accept')
  t.equal(res.status, 200)
  t.same(codes(res.raw).slice(0, 1), ['joined'])
  t.match(res.raw, /href="https:\/\/beta\.example\.com\/join" rel="noreferrer noopener"/)
  t.match(res.raw, /Install the app\./)
  t.match(res.raw, /action="\/beta\/feedback"/, 'the feedback form')
  const tester = (await call(t, app, { url: testerUrl, key })).json.data
  t.equal(tester.status, 'joined')
  t.match(tester.end_user_id, /^eu_[0-9A-Za-z]{21}$/)
  t.ok(tester.joined_at)

  const again = await answer(t, app, token, 'accept')
  t.equal(again.status, 200)
  t.equal(again.raw, res.raw, 'a second accept shows the same page')
  t.same((await call(t, app, { url: testerUrl, key })).json.data, tester, 'and changes nothing')
  const page = await call(t, app, { url: `/beta/join?token=${token}` })
  t.equal(page.raw, res.raw, 'the join link shows the joined page from now on')
})

t.test('one end user per email per project', async (t) => {
  const app = await testApp()
  const a = await programWithTester(t, app)
  const second = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: a.key, body: { name: 'Second', status: 'active' } })).json.data.id
  const b = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${second}/testers`, key: a.key, body: { email: 'ADA@example.com' } })).json.data
  const other = await programWithTester(t, app)
  for (const token of [a.token, b.token, other.token]) await answer(t, app, token, 'accept')
  const eu = async (url: string, key: string) => (await call(t, app, { url, key })).json.data.end_user_id
  const first = await eu(a.testerUrl, a.key)
  t.equal(await eu(`/v1/beta/programs/${second}/testers/${b.id}`, a.key), first, 'the same person in two programs of a project')
  t.not(await eu(other.testerUrl, other.key), first, 'another project has its own end user')
})

t.test('an end user no tester is any more is forgotten, email and all', async (t) => {
  // Deleting a tester left the end user behind, email included, for good (found by a takeover
  // review); so did a program's deletion and a public tester's restore, which lets the next
  // accept make a new one. Migration 0017's trigger forgets it in the same statement.
  const app = await testApp()
  const { db } = await testDatabase()
  const known = async (id: string) => rowsOf(await db.execute(sql`select 1 from end_users where id = ${id}`)).length === 1
  const a = await programWithTester(t, app, {}, 'forgotten@example.com')
  const second = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: a.key, body: { name: 'Second', status: 'active' } })).json.data.id as string
  const b = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${second}/testers`, key: a.key, body: { email: 'forgotten@example.com' } })).json.data
  for (const token of [a.token, b.token]) await answer(t, app, token, 'accept')
  const person = (await call(t, app, { url: a.testerUrl, key: a.key })).json.data.end_user_id as string
  t.ok(await known(person))

  t.equal((await call(t, app, { method: 'DELETE', url: a.testerUrl, key: a.key })).status, 204)
  t.ok(await known(person), 'kept while a tester in another program is that person')
  t.equal((await call(t, app, { method: 'DELETE', url: `/v1/beta/programs/${second}`, key: a.key })).status, 204)
  t.notOk(await known(person), 'forgotten with the program of the last tester who was that person')

  const c = await programWithTester(t, app, {}, 'restored@example.com')
  await answer(t, app, c.token, 'accept')
  const joined = (await call(t, app, { url: c.testerUrl, key: c.key })).json.data.end_user_id as string
  await call(t, app, { method: 'PATCH', url: c.testerUrl, key: c.key, body: { status: 'revoked' } })
  t.ok(await known(joined), 'a revoked tester is still that person')
  t.equal((await call(t, app, { method: 'PATCH', url: c.testerUrl, key: c.key, body: { status: 'invited' } })).json.data.end_user_id, null)
  t.notOk(await known(joined), 'restored to invited, it is nobody yet: the end user is forgotten')
})

t.test('decline, then change one’s mind; a joined tester cannot decline', async (t) => {
  const app = await testApp()
  const { key, token, testerUrl } = await programWithTester(t, app)
  const declined = await answer(t, app, token, 'decline')
  t.equal(declined.status, 200)
  t.same(codes(declined.raw), ['declined'])
  t.notMatch(declined.raw, /value="decline"/)
  t.notMatch(declined.raw, /beta\.example\.com/)
  t.equal((await call(t, app, { url: testerUrl, key })).json.data.status, 'declined')
  t.equal((await answer(t, app, token, 'decline')).status, 200, 'declining again is a no-op')
  t.equal((await answer(t, app, token, 'accept')).status, 200)
  const refused = await answer(t, app, token, 'decline')
  t.equal(refused.status, 409)
  t.same(codes(refused.raw), ['invalid_transition'])
  t.equal((await call(t, app, { url: testerUrl, key })).json.data.status, 'joined')
})

t.test('unknown, missing and malformed tokens are the 404 page, showing nothing of anyone', async (t) => {
  const app = await testApp()
  await programWithTester(t, app)
  for (const url of ['/beta/join?token=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '/beta/join', '/beta/join?token=', '/beta/join?token=AAAA']) {
    const res = await call(t, app, { url })
    t.equal(res.status, 404, url)
    t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    t.same(codes(res.raw), ['not_found'])
    t.notMatch(res.raw, /Mobile beta|<script>/)
  }
  for (const token of ['%3Cscript%3E', '%ZZ', 'a%20b']) {
    const res = await call(t, app, { url: `/beta/join?token=${token}` })
    t.equal(res.status, 400, `characters no token has: ${token}`)
    t.equal(res.json.code, 'validation_failed')
  }
  const posted = await answer(t, app, 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'accept')
  t.equal(posted.status, 404)
})

t.test('revoking stops the token at once (410); restoring makes the same link work again', async (t) => {
  const app = await testApp()
  const { key, token, testerUrl } = await programWithTester(t, app)
  await answer(t, app, token, 'accept')
  t.equal((await call(t, app, { method: 'PATCH', url: testerUrl, key, body: { status: 'revoked' } })).status, 200)
  for (const res of [await call(t, app, { url: `/beta/join?token=${token}` }), await answer(t, app, token, 'accept'), await answer(t, app, token, 'decline')]) {
    t.equal(res.status, 410)
    t.same(codes(res.raw), ['revoked'])
    t.notMatch(res.raw, /beta\.example\.com|Install the app/)
  }
  t.equal((await call(t, app, { url: testerUrl, key })).json.data.status, 'revoked', 'a revoked tester cannot accept')
  t.equal((await call(t, app, { method: 'PATCH', url: testerUrl, key, body: { status: 'invited' } })).status, 200)
  const restored = await call(t, app, { url: `/beta/join?token=${token}` })
  t.equal(restored.status, 200)
  t.match(restored.raw, /value="accept"/, 'invited again: accept anew')
})

t.test('a draft or closed program is the 409 page and takes no answer', async (t) => {
  const app = await testApp()
  for (const [status, code] of [['draft', 'program_not_open'], ['closed', 'program_closed']] as const) {
    const { key, token, programId, testerUrl } = await programWithTester(t, app, { status: 'draft' })
    if (status === 'closed') await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${programId}`, key, body: { status: 'closed' } })
    const page = await call(t, app, { url: `/beta/join?token=${token}` })
    t.equal(page.status, 409, status)
    t.same(codes(page.raw), [code])
    const posted = await answer(t, app, token, 'accept')
    t.equal(posted.status, 409)
    t.equal((await call(t, app, { url: testerUrl, key })).json.data.status, 'invited', 'nothing changed')
  }
})

t.test('a deleted tester’s token is the 404 page', async (t) => {
  const app = await testApp()
  const { key, token, testerUrl } = await programWithTester(t, app)
  await call(t, app, { method: 'DELETE', url: testerUrl, key })
  t.equal((await call(t, app, { url: `/beta/join?token=${token}` })).status, 404)
})

t.test('form posts: a bad form is 400, JSON is 415, and /v1 still refuses forms', async (t) => {
  const app = await testApp()
  const { key, token, testerUrl } = await programWithTester(t, app)
  for (const body of [form({ token }), form({ token, action: 'join' }), form({ token, action: 'accept', extra: '1' }), `token=${token}&action=accept&action=decline`, `token=${token}%00&action=accept`]) {
    const res = await call(t, app, { method: 'POST', url: '/beta/join', body, headers: FORM })
    t.equal(res.status, 400, body)
    t.equal(res.json.code, 'validation_failed')
  }
  const json = await call(t, app, { method: 'POST', url: '/beta/join', body: { token, action: 'accept' } })
  t.equal(json.status, 415)
  t.equal(json.json.code, 'unsupported_media_type')
  t.match(json.json.detail, /application\/x-www-form-urlencoded/)
  // What else a browser's form may send: the message names the form's type, not JSON.
  for (const type of ['multipart/form-data; boundary=x', 'text/plain']) {
    const other = await call(t, app, { method: 'POST', url: '/beta/join', body: `token=${token}&action=accept`, headers: { 'content-type': type } })
    t.equal(other.status, 415, type)
    t.match(other.json.detail, /application\/x-www-form-urlencoded/, type)
  }
  const v1 = await call(t, app, { method: 'PATCH', url: testerUrl, key, body: form({ status: 'revoked' }), headers: FORM })
  t.equal(v1.status, 415)
  t.equal((await call(t, app, { url: testerUrl, key })).json.data.status, 'invited')
})

t.test('tokens never reach the log', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'debug', adminToken: ADMIN_TOKEN }, await testDatabase(), { logger: { stream } })
  t.teardown(() => app.close())
  await createProject()
  const { token, key, testerUrl } = await programWithTester(t, app)
  await call(t, app, { url: `/beta/join?token=${token}` })
  await call(t, app, { url: `/beta/join?token=${token}&extra=1` })
  await answer(t, app, token, 'accept')
  await call(t, app, { method: 'POST', url: '/beta/feedback', body: form({ token, body: 'Nice' }), headers: FORM })
  await call(t, app, { method: 'POST', url: '/beta/join', body: form({ token, action: 'nope' }), headers: FORM })
  await call(t, app, { method: 'PATCH', url: testerUrl, key, body: { status: 'revoked' } })
  await call(t, app, { url: `/beta/join?token=${token}` })
  const all = lines.join('')
  t.ok(all.includes('"route":"/beta/join"'), 'the requests were logged')
  t.notOk(all.includes(token), 'the token is in no log line')
})
