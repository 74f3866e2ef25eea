// PUBLIC_BASE_URL on the public surface: absolute links in both feeds and on the pages, a
// canonical URL on the changelog pages, the signup answer's join link; and a forged Host (or
// X-Forwarded-Host) reaching none of them, nor their ETags, so no cache can be poisoned with it.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { FORM, form } from './beta-helpers.js'

type T = Parameters<typeof call>[0]
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any

const BASE = 'https://feedback.example.com'
const FORGED = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http', forwarded: 'host=evil.example;proto=http' }

/** A project with three published entries (one translated to French and labelled), a draft, and a beta program open to signup. */
async function publicProject(t: T, app: FastifyInstance) {
  const project = await createProject({ name: 'Acme' })
  const send = (method: 'POST' | 'PATCH', url: string, body: object) => call(t, app, { method, url, key: project.key, body })
  const entries: string[] = []
  for (const [i, title] of ['Old', 'Middle', 'New'].entries()) {
    const res = await send('POST', '/v1/changelog', { title, body: `See [the docs](https://docs.example.com/${i}).`, labels: ['news'], status: 'published', published_at: `202${i}-01-01T00:00:00Z` })
    t.equal(res.status, 201)
    entries.push(res.json.data.id)
  }
  t.equal((await send('PATCH', `/v1/changelog/${entries[2]}`, { locale: 'fr', title: 'Nouveau', body: 'Texte.' })).status, 200)
  const program = await send('POST', '/v1/beta/programs', { name: 'Open beta', status: 'active', allow_public_signup: true })
  t.equal(program.status, 201)
  const [oldest, , newest] = entries as [string, string, string]
  const changelog = `/portal/${project.id}/changelog`
  return { project, oldest, newest, changelog, signup: `/portal/${project.id}/beta/${program.json.data.slug}` }
}

/** Every link target of an HTML page (href and action), entities decoded. */
const htmlLinks = (page: string) => [...page.matchAll(/\s(?:href|action)="([^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'))
const canonicalOf = (page: string) => /<link rel="canonical" href="([^"]*)">/.exec(page)?.[1]?.replace(/&amp;/g, '&')

t.test('with PUBLIC_BASE_URL: absolute links everywhere, a canonical URL on the changelog pages, whatever Host says', async (t) => {
  const app = await testApp({ publicBaseUrl: BASE })
  const { project, oldest, newest, changelog } = await publicProject(t, app)
  const get = (url: string, headers: Record<string, string> = {}) => call(t, app, { url, headers: { ...FORGED, ...headers } })

  const pages = {
    [`${changelog}?limit=1&offset=1&label=news&locale=fr`]: `${BASE}${changelog}?locale=fr&label=news&limit=1&offset=1`,
    [changelog]: `${BASE}${changelog}`,
    [`${changelog}/${oldest}`]: `${BASE}${changelog}/${oldest}`,
    // The locale asked for, in its conventional case, whatever case it was asked in.
    [`${changelog}?locale=FR&label=news`]: `${BASE}${changelog}?locale=fr&label=news`,
    [`${changelog}?locale=pt-br`]: `${BASE}${changelog}?locale=pt-BR`,
    // A translation shown: canonical in its locale, in the stored spelling.
    [`${changelog}/${newest}?locale=FR`]: `${BASE}${changelog}/${newest}?locale=fr`,
    // No translation in that locale: the page is the base one, and says so.
    [`${changelog}/${oldest}?locale=fr`]: `${BASE}${changelog}/${oldest}`,
    // A link from a newsletter or a network: their parameters are no part of the page's address.
    [`${changelog}?utm_source=newsletter&locale=fr&fbclid=IwAR0`]: `${BASE}${changelog}?locale=fr`,
    [`${changelog}/${oldest}?utm_campaign=launch`]: `${BASE}${changelog}/${oldest}`,
  }
  for (const [url, canonical] of Object.entries(pages)) {
    const res = await get(url)
    t.equal(res.status, 200, url)
    t.notMatch(res.raw, /evil\.example/, `${url}: nothing from the forged Host`)
    t.equal(canonicalOf(res.raw), canonical, `${url}: canonical`)
    for (const link of htmlLinks(res.raw)) t.ok(link.startsWith(`${BASE}/`) || link.startsWith('https://docs.example.com/'), `${url}: ${link} is absolute on PUBLIC_BASE_URL`)
  }
  const list = await get(changelog)
  t.match(list.raw, new RegExp(`<h2><a href="${BASE}${changelog}/${newest}">New</a></h2>`), 'the list links to absolute permalinks')
  t.match(list.raw, new RegExp(`<link rel="alternate" type="application/atom\\+xml" title="Acme changelog \\(Atom\\)" href="${BASE}${changelog}.atom">`))

  const atom = await get(`${changelog}.atom?locale=fr`)
  t.equal(atom.status, 200)
  t.notMatch(atom.raw, /evil\.example/, 'Atom: nothing from the forged Host')
  const atomLinks = [...atom.raw.matchAll(/<link [^>]*href="([^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'))
  t.strictSame(atomLinks.slice(0, 2), [`${BASE}${changelog}?locale=fr`, `${BASE}${changelog}.atom?locale=fr`], 'Atom: the page and self links')
  t.strictSame(atomLinks.slice(2, 3), [`${BASE}${changelog}/${newest}?locale=fr`], 'Atom: each entry links to its absolute permalink')
  t.equal(atomLinks.length, 5)
  for (const link of atomLinks) t.ok(link.startsWith(`${BASE}/`), `Atom: ${link} is absolute`)

  const upper = await get(`${changelog}.atom?locale=FR`)
  t.strictSame(
    [...upper.raw.matchAll(/<link [^>]*href="([^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&')),
    atomLinks,
    'Atom asked for in FR: the links of fr',
  )
  t.equal(upper.headers.etag, atom.headers.etag, 'one selection, one ETag, whatever the case it was asked in')

  const json = await get(`${changelog}.json`)
  t.notMatch(json.raw, /evil\.example/, 'JSON Feed: nothing from the forged Host')
  t.equal(json.json.home_page_url, `${BASE}${changelog}`)
  t.equal(json.json.feed_url, `${BASE}${changelog}.json`)
  t.strictSame(json.json.items.map((i: Any) => i.url).at(-1), `${BASE}${changelog}/${oldest}`, 'JSON Feed: items link to absolute permalinks')

  // A shared cache keys on the URL: what it stores, and the ETag it revalidates with, must not
  // depend on the Host of the request that filled it.
  for (const url of [changelog, `${changelog}/${oldest}`, `${changelog}.atom`, `${changelog}.json`]) {
    const honest = await call(t, app, { url })
    const forged = await get(url)
    t.equal(forged.raw, honest.raw, `${url}: the same body whatever the Host`)
    t.equal(forged.headers.etag, honest.headers.etag, `${url}: the same ETag whatever the Host`)
    const revalidated = await get(url, { 'if-none-match': String(honest.headers.etag) })
    t.equal(revalidated.status, 304, `${url}: a forged Host revalidates the honest copy`)
    t.notMatch(JSON.stringify(revalidated.headers), /evil\.example/, `${url}: no header of the 304 names the forged Host`)
  }
  t.ok(project.id)
})

t.test('without PUBLIC_BASE_URL: links stay relative, no canonical URL, and a forged Host still reaches nothing', async (t) => {
  const app = await testApp()
  const { oldest, changelog } = await publicProject(t, app)
  for (const url of [changelog, `${changelog}/${oldest}`]) {
    const res = await call(t, app, { url, headers: FORGED })
    t.equal(res.status, 200)
    t.notMatch(res.raw, /evil\.example/, `${url}: nothing from the forged Host`)
    t.equal(canonicalOf(res.raw), undefined, `${url}: no canonical URL`)
    for (const link of htmlLinks(res.raw)) t.ok(link.startsWith('/') || link.startsWith('https://docs.example.com/'), `${url}: ${link} is relative`)
  }
  for (const url of [`${changelog}.atom`, `${changelog}.json`]) {
    const res = await call(t, app, { url, headers: FORGED })
    t.notMatch(res.raw, /evil\.example|https?:\/\/(?!docs\.example\.com|www\.w3\.org|jsonfeed\.org)/, `${url}: relative links, nothing from the forged Host`)
  }
})

t.test('PUBLIC_BASE_URL is part of the ETag: a deployment that changes it changes every tag', async (t) => {
  const plain = await testApp()
  const based = await testApp({ publicBaseUrl: BASE })
  const { oldest, changelog } = await publicProject(t, plain)
  for (const url of [changelog, `${changelog}/${oldest}`, `${changelog}.atom`, `${changelog}.json`]) {
    const a = await call(t, plain, { url })
    const b = await call(t, based, { url })
    t.not(a.headers.etag, b.headers.etag, `${url}: its own ETag with PUBLIC_BASE_URL`)
    t.equal((await call(t, based, { url, headers: { 'if-none-match': String(a.headers.etag) } })).status, 200, `${url}: a copy with relative links is not current`)
  }
})

t.test("the signup answer's join link is on PUBLIC_BASE_URL when set, relative otherwise, never on Host", async (t) => {
  for (const [base, prefix] of [[BASE, `${BASE}/beta/join`], [undefined, '/beta/join']] as const) {
    const app = await testApp({ publicBaseUrl: base, logLevel: 'silent' })
    const { signup } = await publicProject(t, app)
    const res = await call(t, app, { method: 'POST', url: signup, body: form({ email: 'grace@example.com' }), headers: { ...FORM, ...FORGED } })
    t.equal(res.status, 201)
    t.notMatch(res.raw, /evil\.example/, 'nothing from the forged Host')
    const link = /<a href="([^"]+)">/.exec(res.raw)?.[1]
    t.match(link, new RegExp(`^${prefix.replace(/[.?]/g, '\\$&')}\\?token=[A-Za-z0-9_-]{32}$`), `${base ?? 'unset'}: the join link`)
  }
})
