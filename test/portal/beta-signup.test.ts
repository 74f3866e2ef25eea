// Public signup: a program open to it takes testers by email, joined at once.
import t from 'tap'
import { call, testApp } from '../helpers/app.js'
import { FORM, answer, codes, form, programWithTester } from './beta-helpers.js'

async function openProgram(t: Parameters<typeof call>[0], app: Parameters<typeof call>[1], program: Record<string, unknown> = {}) {
  const setup = await programWithTester(t, app, { name: 'Open <beta>', allow_public_signup: true, ...program })
  const slug = (await call(t, app, { url: `/v1/beta/programs/${setup.programId}`, key: setup.key })).json.data.slug as string
  return { ...setup, url: `/portal/${setup.project.id}/beta/${slug}` }
}

// Signups count per client address, and every injected request comes from one: each test
// gets an app of its own, so that its signups do not eat another test's budget.
const ownApp = () => testApp({ logLevel: 'silent' })

const signup = (t: Parameters<typeof call>[0], app: Parameters<typeof call>[1], url: string, email: string, headers: Record<string, string> = {}) =>
  call(t, app, { method: 'POST', url, body: form({ email }), headers: { ...FORM, ...headers } })

t.test('the signup page shows the program and an email form', async (t) => {
  const app = await ownApp()
  const { url } = await openProgram(t, app)
  const res = await call(t, app, { url })
  t.equal(res.status, 200)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
  t.match(res.raw, /<h1>Open &lt;beta&gt;<\/h1>/)
  t.match(res.raw, /<input id="email" type="email" name="email"/)
  t.match(res.raw, new RegExp(`action="${url}"`))
  t.notMatch(res.raw, /beta\.example\.com/, 'no access details before signing up')
})

t.test('signing up makes a joined public tester with an end user; the same email again changes nothing', async (t) => {
  const app = await ownApp()
  const { url, key, programId } = await openProgram(t, app)
  const res = await signup(t, app, url, '  Grace@Example.com ')
  t.equal(res.status, 201)
  t.same(codes(res.raw), ['joined'])
  t.match(res.raw, /beta\.example\.com/, 'the access details')
  const link = /href="\/beta\/join\?token=([A-Za-z0-9_-]{32})"/.exec(res.raw)
  t.ok(link, 'the personal join link')
  const testers = (await call(t, app, { url: `/v1/beta/programs/${programId}/testers?status=joined`, key })).json.data
  t.equal(testers.length, 1)
  t.match(testers[0], { email: 'grace@example.com', source: 'public', status: 'joined', token: link![1] })
  t.match(testers[0].end_user_id, /^eu_/)
  t.ok(testers[0].joined_at)
  const page = await call(t, app, { url: `/beta/join?token=${link![1]}` })
  t.equal(page.status, 200)
  t.match(page.raw, /action="\/beta\/feedback"/, 'the link leads to the feedback form')

  const again = await signup(t, app, url, 'grace@example.COM')
  t.equal(again.status, 200)
  t.same(codes(again.raw), ['existing'])
  t.notMatch(again.raw, new RegExp(link![1]!), 'the existing tester’s token is not shown')
  const invitedEmail = await signup(t, app, url, 'ada@example.com')
  t.equal(invitedEmail.status, 200, 'an invited tester’s email is left as it is')
  const all = (await call(t, app, { url: `/v1/beta/programs/${programId}/testers`, key })).json.data
  t.equal(all.length, 2)
  t.equal(all.find((x: { email: string }) => x.email === 'ada@example.com').status, 'invited')
})

t.test('an invalid email is the 400 page with the form; a schema-refused form is a 400 problem', async (t) => {
  const app = await ownApp()
  const { url, key, programId } = await openProgram(t, app)
  for (const email of ['', 'plain', 'a@b', 'a b@c.co', `${'x'.repeat(250)}@example.com`, '<x>@y']) {
    const res = await signup(t, app, url, email)
    t.equal(res.status, 400, JSON.stringify(email))
    t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    t.notMatch(res.raw, /<x>/)
  }
  for (const body of ['', 'mail=a@b.co', `email=a@b.co&email=c@d.co`, `email=${'x'.repeat(1001)}`]) {
    const res = await call(t, app, { method: 'POST', url, body, headers: FORM })
    t.equal(res.status, 400, body.slice(0, 30))
    t.equal(res.json.code, 'validation_failed')
  }
  t.equal((await call(t, app, { url: `/v1/beta/programs/${programId}/testers`, key })).json.data.length, 1, 'no tester was made')
})

t.test('a program that is not active or not open to signup, or of another project, is the 404 page', async (t) => {
  const app = await ownApp()
  const closedSignup = await openProgram(t, app, { allow_public_signup: false })
  const draft = await openProgram(t, app, { status: 'draft' })
  const open = await openProgram(t, app)
  const other = await openProgram(t, app, { name: 'Other beta' })
  const foreign = open.url.replace(open.project.id, other.project.id)
  for (const url of [closedSignup.url, draft.url, foreign, `/portal/${open.project.id}/beta/nope`, '/portal/nope/beta/x', `/portal/prj_AAAAAAAAAAAAAAAAAAAAA/beta/open-beta`]) {
    const page = await call(t, app, { url })
    t.equal(page.status, 404, url)
    t.same(codes(page.raw), ['not_found'])
    const posted = await signup(t, app, url, 'someone@example.com')
    t.equal(posted.status, 404)
  }
  await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${open.programId}`, key: open.key, body: { status: 'closed' } })
  t.equal((await call(t, app, { url: open.url })).status, 404, 'a closed program takes no signup')
})

t.test('signups are limited per client address', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 1200 })
  const { url } = await openProgram(t, app)
  const statuses: number[] = []
  for (let i = 0; i < 11; i++) {
    const res = await call(t, app, { method: 'POST', url, body: form({ email: `p${i}@example.com` }), headers: FORM })
    statuses.push(res.status)
    if (res.status === 429) {
      t.equal(res.json.code, 'rate_limited')
      t.ok(res.headers['retry-after'])
      t.match(res.json.detail, /^More than 10 signups a minute from this address; retry in /, 'says what it counts')
    }
  }
  t.same(statuses, [...Array(10).fill(201), 429])
  t.equal((await call(t, app, { url })).status, 200, 'reading the page has its own, larger budget')
})

t.test('every answer at a tester page is noindex: a refused form, a 405 and a 404 too', async (t) => {
  // Found by an outside review: a 405 at the join page and the signup form's 400 problem had no
  // X-Robots-Tag, though their URLs and forms hold a token or an email.
  const app = await ownApp()
  const { project, url: signup } = await openProgram(t, app)
  for (const [what, request] of [
    ['the join page, a method it does not allow', { method: 'PUT' as const, url: '/beta/join?token=x' }],
    ['the join page written with an escape, a method it does not allow', { method: 'PUT' as const, url: '/beta/jo%69n?token=x' }],
    ['the join page written with an escape, a token with a character no token has', { url: '/beta/jo%69n?token=x!' }],
    ['the feedback form, a method it does not allow', { method: 'DELETE' as const, url: '/beta/feedback' }],
    ['the signup page, an If-None-Match past its bound', { url: signup, headers: { 'if-none-match': `"${'x'.repeat(2000)}"` } }],
    ['a signup page of no program', { url: `/portal/${project.id}/beta/no-such-program` }],
  ] as const) {
    const res = await call(t, app, request)
    t.ok(res.status >= 400, `${what}: ${res.status}`)
    t.equal(res.headers['x-robots-tag'], 'noindex', `${what}: noindex`)
  }
})

t.test("a public tester restored and accepting again gets an end user of its own, never the invitation's", async (t) => {
  // Found by an outside review: a restore clears the tester's end user, and accepting again gave
  // every tester the project's invited end user for the email, a public signup's too. Anyone could
  // sign up with someone's email, wait for a revoke and a restore, and accept into the identity
  // the invitation had made (contract §11: a signup never attaches to such an end user).
  const app = await ownApp()
  const { url, key, programId } = await openProgram(t, app)
  const email = 'victim@example.com'
  const invited = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Invited only', status: 'active' } })).json.data.id as string
  const invitation = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${invited}/testers`, key, body: { email } })).json.data
  t.equal((await answer(t, app, invitation.token, 'accept')).status, 200)
  const victim = (await call(t, app, { url: `/v1/beta/programs/${invited}/testers/${invitation.id}`, key })).json.data.end_user_id as string
  t.match(victim, /^eu_/, 'the invitation made an end user')

  t.equal((await signup(t, app, url, email)).status, 201)
  const testers = (await call(t, app, { url: `/v1/beta/programs/${programId}/testers?limit=100`, key })).json.data as { id: string; email: string; token: string; end_user_id: string }[]
  const signedUp = testers.find((tester) => tester.email === email)!
  t.not(signedUp.end_user_id, victim, 'the signup: an end user of its own')
  const testerUrl = `/v1/beta/programs/${programId}/testers/${signedUp.id}`
  t.equal((await call(t, app, { method: 'PATCH', url: testerUrl, key, body: { status: 'revoked' } })).status, 200)
  t.equal((await call(t, app, { method: 'PATCH', url: testerUrl, key, body: { status: 'invited' } })).status, 200)
  t.equal((await answer(t, app, signedUp.token, 'accept')).status, 200)
  const after = (await call(t, app, { url: testerUrl, key })).json.data
  t.match(after, { source: 'public', status: 'joined' })
  t.match(after.end_user_id, /^eu_/, 'an end user again')
  t.not(after.end_user_id, victim, 'never the one the invitation made')
})
