// The feedback form: joined testers write until the deadline; teams read it through the API.
import t from 'tap'
import { call, testApp } from '../helpers/app.js'
import { FORM, answer, codes, form, programWithTester } from './beta-helpers.js'

const send = (t: Parameters<typeof call>[0], app: Parameters<typeof call>[1], fields: Record<string, string>) =>
  call(t, app, { method: 'POST', url: '/beta/feedback', body: form(fields), headers: FORM })

t.test('a joined tester sends feedback and the team reads it through the API', async (t) => {
  const app = await testApp()
  const { key, token, tester, programId } = await programWithTester(t, app)
  await answer(t, app, token, 'accept')
  const res = await send(t, app, { token, body: 'Undo <loses> the cursor.\r\nSecond line.', rating: '4' })
  t.equal(res.status, 200)
  t.ok(codes(res.raw).includes('feedback_received'))
  t.match(res.raw, /Thank you/)
  t.notMatch(res.raw, /Undo <loses>/, 'the text is not echoed unescaped')
  const list = await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key })
  t.equal(list.json.data.length, 1)
  t.match(list.json.data[0], { beta_program_id: programId, beta_tester_id: tester.id, body: 'Undo <loses> the cursor.\nSecond line.', rating: 4 })
  const unrated = await send(t, app, { token, body: 'No rating', rating: '' })
  t.equal(unrated.status, 200)
  const again = await call(t, app, { url: `/v1/beta/programs/${programId}/feedback?tester_id=${tester.id}`, key })
  t.same(again.json.data.map((f: { rating: number | null }) => f.rating), [null, 4])
})

t.test('empty or over-long feedback is the 400 page with the form and the text kept', async (t) => {
  const app = await testApp()
  const { key, token, programId } = await programWithTester(t, app)
  await answer(t, app, token, 'accept')
  const empty = await send(t, app, { token, body: '  \r\n ' })
  t.equal(empty.status, 400)
  t.equal(empty.headers['content-type'], 'text/html; charset=utf-8')
  t.ok(codes(empty.raw).includes('validation_failed'))
  const long = await send(t, app, { token, body: `<b>${'x'.repeat(10_000)}` })
  t.equal(long.status, 400)
  t.match(long.raw, /&lt;b&gt;x/, 'the text is kept, escaped')
  const exactly = await send(t, app, { token, body: `${'y'.repeat(4_999)}\r\n${'y'.repeat(5_000)}` })
  t.equal(exactly.status, 200, '10 000 characters with a CRLF counted once')
  t.equal((await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key })).json.data.length, 1)
  const forms: Record<string, string>[] = [{ token, body: 'x', rating: '6' }, { token, body: 'x', rating: '0' }, { body: 'x' }, { token, body: 'x', extra: '1' }]
  for (const fields of forms) {
    const res = await send(t, app, fields)
    t.equal(res.status, 400, JSON.stringify(fields))
    t.equal(res.json.code, 'validation_failed')
  }
})

t.test('after the deadline the page says feedback is closed and a post is 409', async (t) => {
  const app = await testApp()
  const { key, token, programId } = await programWithTester(t, app, { feedback_deadline: '2020-01-01T00:00:00Z' })
  const joined = await answer(t, app, token, 'accept')
  t.equal(joined.status, 200, 'joining still works')
  t.ok(codes(joined.raw).includes('feedback_closed'))
  t.notMatch(joined.raw, /action="\/beta\/feedback"/, 'no form')
  t.match(joined.raw, /beta\.example\.com/, 'the access details still show')
  const res = await send(t, app, { token, body: 'Too late' })
  t.equal(res.status, 409)
  t.ok(codes(res.raw).includes('feedback_closed'))
  t.same((await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key })).json.data, [])
})

t.test('a deadline in the future leaves the form open', async (t) => {
  const app = await testApp()
  const { token } = await programWithTester(t, app, { feedback_deadline: '2999-01-01T00:00:00Z' })
  await answer(t, app, token, 'accept')
  t.equal((await send(t, app, { token, body: 'In time' })).status, 200)
})

t.test('only joined testers of an active program write; revoked is 410, unknown is 404', async (t) => {
  const app = await testApp()
  const { key, token, testerUrl, programId } = await programWithTester(t, app)
  const invited = await send(t, app, { token, body: 'Before joining' })
  t.equal(invited.status, 409)
  t.same(codes(invited.raw), ['not_joined'])
  await answer(t, app, token, 'decline')
  t.equal((await send(t, app, { token, body: 'Declined' })).status, 409)
  await answer(t, app, token, 'accept')
  await call(t, app, { method: 'PATCH', url: testerUrl, key, body: { status: 'revoked' } })
  const revoked = await send(t, app, { token, body: 'Revoked' })
  t.equal(revoked.status, 410)
  await call(t, app, { method: 'PATCH', url: testerUrl, key, body: { status: 'invited' } })
  await answer(t, app, token, 'accept')
  await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${programId}`, key, body: { status: 'closed' } })
  t.equal((await send(t, app, { token, body: 'Closed' })).status, 409)
  t.equal((await send(t, app, { token: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', body: 'Who?' })).status, 404)
  t.same((await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key })).json.data, [], 'none of it was stored')
})

t.test('deleting the tester deletes its feedback, end to end', async (t) => {
  const app = await testApp()
  const { key, token, testerUrl, programId } = await programWithTester(t, app)
  await answer(t, app, token, 'accept')
  await send(t, app, { token, body: 'Soon gone' })
  const [feedback] = (await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key })).json.data
  await call(t, app, { method: 'DELETE', url: testerUrl, key })
  t.equal((await call(t, app, { url: `/v1/beta/programs/${programId}/feedback/${feedback.id}`, key })).status, 404)
  t.equal((await send(t, app, { token, body: 'Ghost' })).status, 404)
})
