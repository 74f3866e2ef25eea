// Crawlers and languages: pages whose URL or answer holds a tester's token say `X-Robots-Tag:
// noindex`; the public changelog may be indexed; every page names its language in <html lang>.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { FORM, answer, form, programWithTester } from './beta-helpers.js'

type Res = Awaited<ReturnType<typeof call>>

t.test('the join page, its answers, the feedback form and its answers, and signup send X-Robots-Tag: noindex', async (t) => {
  const app = await testApp({ logLevel: 'silent' })
  const { key, programId, token, project } = await programWithTester(t, app, { allow_public_signup: true })
  const second = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${programId}/testers`, key, body: { email: 'bob@example.com' } })).json.data
  const slug = (await call(t, app, { url: `/v1/beta/programs/${programId}`, key })).json.data.slug as string
  const feedback = (fields: Record<string, string>) => call(t, app, { method: 'POST', url: '/beta/feedback', body: form(fields), headers: FORM })
  const signup = `/portal/${project.id}/beta/${slug}`

  const pages: [string, number, () => Promise<Res>][] = [
    ['the join page (invited)', 200, () => call(t, app, { url: `/beta/join?token=${token}` })],
    ['feedback before joining', 409, () => feedback({ token, body: 'Too early' })],
    ['the declined answer', 200, () => answer(t, app, second.token, 'decline')],
    ['the join page (declined)', 200, () => call(t, app, { url: `/beta/join?token=${second.token}` })],
    ['the accepted answer', 200, () => answer(t, app, token, 'accept')],
    ['the join page with the feedback form', 200, () => call(t, app, { url: `/beta/join?token=${token}` })],
    ['declining once joined', 409, () => answer(t, app, token, 'decline')],
    ['the feedback answer', 200, () => feedback({ token, body: 'Great', rating: '5' })],
    ['the feedback form again, with an error', 400, () => feedback({ token, body: ' ' })],
    ['an unknown token', 404, () => call(t, app, { url: `/beta/join?token=${'x'.repeat(32)}` })],
    ['the signup page', 200, () => call(t, app, { url: signup })],
    ['the signup answer, with the join link', 201, () => call(t, app, { method: 'POST', url: signup, body: form({ email: 'grace@example.com' }), headers: FORM })],
    ['the signup form again, with an error', 400, () => call(t, app, { method: 'POST', url: signup, body: form({ email: 'nope' }), headers: FORM })],
    ['an email already on the program', 200, () => call(t, app, { method: 'POST', url: signup, body: form({ email: 'grace@example.com' }), headers: FORM })],
  ]
  for (const [what, status, load] of pages) {
    const res = await load()
    t.equal(res.status, status, `${what} → ${status}`)
    t.equal(res.headers['x-robots-tag'], 'noindex', `${what}: X-Robots-Tag: noindex`)
    t.match(res.raw, /^<!doctype html>\n<html lang="en">/, `${what}: <html lang="en">`)
  }
  t.equal((await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${programId}/testers/${second.id}`, key, body: { status: 'revoked' } })).status, 200)
  const revoked = await call(t, app, { url: `/beta/join?token=${second.token}` })
  t.equal(revoked.status, 410)
  t.equal(revoked.headers['x-robots-tag'], 'noindex', 'the revoked page too')

  // Refused before any page is made (a 400 problem+json): the URL or form holds a token all the same.
  const refusals: [string, () => Promise<Res>][] = [
    ['the join page with a character no token has', () => call(t, app, { url: `/beta/join?token=${token}!` })],
    ['an answer that is neither accept nor decline', () => call(t, app, { method: 'POST', url: '/beta/join', body: form({ token, action: 'bogus' }), headers: FORM })],
    ['feedback with a rating out of range', () => feedback({ token, body: 'Hm', rating: '9' })],
  ]
  for (const [what, load] of refusals) {
    const res = await load()
    t.equal(res.status, 400, what)
    t.equal(res.headers['x-robots-tag'], 'noindex', `${what}: X-Robots-Tag: noindex`)
  }
})

t.test('the public changelog may be indexed, in its entries’ language', async (t) => {
  const app = await testApp()
  const german = await createProject()
  const mixed = await createProject()
  const create = async (key: string, body: object) => {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body })
    t.equal(res.status, 201)
    return res.json.data.id as string
  }
  const dunkel = await create(german.key, { title: 'Dunkelmodus', locale: 'de', status: 'published' })
  await create(german.key, { title: 'Offline', locale: 'de', status: 'published' })
  await create(mixed.key, { title: 'Dark mode', locale: 'en', status: 'published' })
  await create(mixed.key, { title: 'Modo escuro', locale: 'pt-BR', status: 'published' })
  // One language in two regions, and a list mostly in another language than the one asked for
  // (found by an outside review: both were the locale asked for, or English).
  const french = await createProject()
  await create(french.key, { title: 'Mode sombre', locale: 'fr', status: 'published' })
  await create(french.key, { title: 'Mode hors ligne', locale: 'fr-CA', status: 'published' })
  const english = await createProject()
  for (const title of ['One', 'Two', 'Three']) await create(english.key, { title, locale: 'en', status: 'published' })
  await create(english.key, { title: 'Quatro', locale: 'pt-BR', status: 'published' })

  const cases: [string, string][] = [
    [`/portal/${german.id}/changelog`, 'de'],
    [`/portal/${german.id}/changelog/${dunkel}`, 'de'],
    // Entries in several languages: the one most are in; of those tied, the one asked for, else the
    // page's own (English); each entry says its own.
    [`/portal/${mixed.id}/changelog`, 'en'],
    [`/portal/${mixed.id}/changelog?locale=pt-br`, 'pt-BR'],
    [`/portal/${french.id}/changelog`, 'fr'],
    [`/portal/${french.id}/changelog?locale=en`, 'fr'],
    [`/portal/${english.id}/changelog?locale=pt-BR`, 'en'],
    // No entries: the locale asked for, or English.
    [`/portal/${german.id}/changelog?offset=40&locale=fr`, 'fr'],
    [`/portal/${german.id}/changelog?offset=40`, 'en'],
  ]
  for (const [url, lang] of cases) {
    const res = await call(t, app, { url })
    t.equal(res.status, 200)
    t.match(res.raw, new RegExp(`^<!doctype html>\\n<html lang="${lang}">`), `${url}: <html lang="${lang}">`)
    t.notOk(res.headers['x-robots-tag'], `${url}: no X-Robots-Tag`)
    t.notMatch(res.raw, /<meta name="robots"/, `${url}: no robots meta`)
    if (lang !== 'en') t.match(res.raw, /<header lang="en">/, `${url}: the page's own words are marked English`)
  }
  const mixedPage = await call(t, app, { url: `/portal/${mixed.id}/changelog` })
  t.match(mixedPage.raw, /<article id="ch_\w+" lang="pt-BR">/, 'each entry carries its own language')
})
