// The operator's beta switch and unverified emails on the portal (contract §11): with the
// project's beta feature off, every portal page and form answers as for an unknown token or
// program, on the very next request; and a public signup never takes over another tester's
// end user.
import t from 'tap'
import { ADMIN_TOKEN, call, testApp } from '../helpers/app.js'
import { FORM, answer, codes, form, programWithTester } from './beta-helpers.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

// Signups count per client address: an app of its own keeps this file's budget to itself.
const ownApp = () => testApp({ logLevel: 'silent' })

function setBeta(t: Parameters<typeof call>[0], app: Parameters<typeof call>[1], projectId: string, on: boolean) {
  return call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${projectId}`, headers: admin, body: { beta_enabled: on } })
}

t.test('with beta disabled, the join page, its answers, feedback and public signup are 404; re-enabled, they work', async (t) => {
  const app = await ownApp()
  const { project, key, programId, token } = await programWithTester(t, app, { allow_public_signup: true })
  const slug = (await call(t, app, { url: `/v1/beta/programs/${programId}`, key })).json.data.slug as string
  const signupUrl = `/portal/${project.id}/beta/${slug}`
  const feedback = () => call(t, app, { method: 'POST', url: '/beta/feedback', body: form({ token, body: 'Works well.' }), headers: FORM })
  const signup = (email: string) => call(t, app, { method: 'POST', url: signupUrl, body: form({ email }), headers: FORM })

  t.equal((await answer(t, app, token, 'accept')).status, 200, 'joined while beta is on')
  t.equal((await setBeta(t, app, project.id, false)).status, 200)

  const join = await call(t, app, { url: `/beta/join?token=${token}` })
  t.equal(join.status, 404, 'the join page')
  t.same(codes(join.raw), ['not_found'], 'the unknown-token page')
  t.notMatch(join.raw, /Mobile beta|beta\.example\.com/, 'nothing of the program shows')
  t.equal((await answer(t, app, token, 'decline')).status, 404, 'an answer')
  t.equal((await feedback()).status, 404, 'feedback')
  t.equal((await call(t, app, { url: signupUrl })).status, 404, 'the signup page')
  t.equal((await signup('grace@example.com')).status, 404, 'a signup')

  // Nothing was written meanwhile.
  t.equal((await setBeta(t, app, project.id, true)).status, 200)
  const testers = (await call(t, app, { url: `/v1/beta/programs/${programId}/testers`, key })).json.data
  t.same(testers.map((x: { email: string; status: string }) => [x.email, x.status]), [['ada@example.com', 'joined']])
  t.same((await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key })).json.data, [])

  t.equal((await call(t, app, { url: `/beta/join?token=${token}` })).status, 200, 're-enabled: the join page')
  t.equal((await feedback()).status, 200, 're-enabled: feedback')
  t.equal((await signup('grace@example.com')).status, 201, 're-enabled: a signup')
})

t.test('a public signup gets an end user of its own, never the one of an invited tester or another signup', async (t) => {
  const app = await ownApp()
  // The victim, invited and joined on one program of the project.
  const invited = await programWithTester(t, app, {}, 'victim@example.com')
  await answer(t, app, invited.token, 'accept')
  const victim = (await call(t, app, { url: invited.testerUrl, key: invited.key })).json.data
  t.match(victim.end_user_id, /^eu_/)

  // Another program of the same project, open to public signup.
  const open = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: invited.key, body: { name: 'Open beta', status: 'active', allow_public_signup: true } })
  const url = `/portal/${invited.project.id}/beta/${open.json.data.slug}`
  const signup = await call(t, app, { method: 'POST', url, body: form({ email: 'Victim@Example.com' }), headers: FORM })
  t.equal(signup.status, 201)
  const [publicTester] = (await call(t, app, { url: `/v1/beta/programs/${open.json.data.id}/testers`, key: invited.key })).json.data
  t.equal(publicTester.email, 'victim@example.com')
  t.match(publicTester.end_user_id, /^eu_/)
  t.not(publicTester.end_user_id, victim.end_user_id, 'not the invited tester’s end user')

  // A signup on a third program with the same email is another person as far as we know.
  const third = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: invited.key, body: { name: 'Third beta', status: 'active', allow_public_signup: true } })
  await call(t, app, { method: 'POST', url: `/portal/${invited.project.id}/beta/${third.json.data.slug}`, body: form({ email: 'victim@example.com' }), headers: FORM })
  const [thirdTester] = (await call(t, app, { url: `/v1/beta/programs/${third.json.data.id}/testers`, key: invited.key })).json.data
  t.not(thirdTester.end_user_id, publicTester.end_user_id, 'not another signup’s end user')
  t.not(thirdTester.end_user_id, victim.end_user_id)

  // An invitation of the same email on yet another program, accepted, is the victim again.
  const fourth = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: invited.key, body: { name: 'Fourth beta', status: 'active' } })
  const again = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${fourth.json.data.id}/testers`, key: invited.key, body: { email: 'VICTIM@example.com' } })).json.data
  await answer(t, app, again.token, 'accept')
  const rejoined = (await call(t, app, { url: `/v1/beta/programs/${fourth.json.data.id}/testers/${again.id}`, key: invited.key })).json.data
  t.equal(rejoined.end_user_id, victim.end_user_id, 'invitations of one email share one end user')
})
