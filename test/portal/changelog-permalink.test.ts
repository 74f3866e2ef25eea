// Each published entry's permalink, /portal/<project>/changelog/<entry>: what the feeds' items and
// the list's entries link to, so a link keeps working when the entry leaves the first page.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

type T = Parameters<typeof call>[0]

async function create(t: T, key: string, body: object): Promise<{ id: string }> {
  const res = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body })
  t.equal(res.status, 201)
  return res.json.data
}

const load = async (t: T, url: string, headers: Record<string, string> = {}) => call(t, await testApp(), { url, headers })
const permalink = (projectId: string, entryId: string) => `/portal/${projectId}/changelog/${entryId}`
/** The entry ids on a list page, in the order shown. */
const articleIds = (page: string) => [...page.matchAll(/<article id="([^"]+)"/g)].map((m) => m[1])

t.test('a published entry has a page of its own, from its stored HTML, indexable and cacheable', async (t) => {
  const project = await createProject({ name: 'Acme & Sons' })
  const entry = await create(t, project.key, {
    title: 'Dark <mode>',
    body: 'Every *screen* follows your theme.',
    status: 'published',
    published_at: '2024-01-01T00:00:00.000Z',
    labels: ['New'],
    version: '3.1.0',
  })
  const res = await load(t, permalink(project.id, entry.id))
  t.equal(res.status, 200)
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8$/)
  t.equal(res.headers['cache-control'], 'public, max-age=60')
  t.match(res.headers.etag, /^"[\w-]+"$/)
  t.match(res.raw, /^<!doctype html>\n<html lang="en">/, 'the page is in the entry’s language')
  t.match(res.raw, /<h1>Dark &lt;mode&gt;<\/h1>/, 'the title, escaped')
  t.match(res.raw, /<title>Dark &lt;mode&gt; · Acme &amp; Sons changelog<\/title>/)
  t.match(res.raw, /<em>screen<\/em>/, 'the body is the rendered Markdown')
  t.match(res.raw, /<time datetime="2024-01-01T00:00:00.000Z">January 1, 2024<\/time> · <span lang="en">Version<\/span> 3\.1\.0 · <span class="label">new<\/span>/)
  t.match(res.raw, new RegExp(`<a href="/portal/${project.id}/changelog">Acme &amp; Sons changelog</a>`), 'a link back to the list')
  t.notMatch(res.raw, /<meta name="robots"/, 'indexable')
  t.notOk(res.headers['x-robots-tag'], 'no X-Robots-Tag: the public changelog may be indexed')
  t.notMatch(res.raw, /rel="canonical"/, 'no canonical URL without PUBLIC_BASE_URL')
  t.notMatch(res.raw, /<script/i)
  t.match(res.headers['content-security-policy'], /^default-src 'none'/)

  const head = await call(t, await testApp(), { method: 'HEAD', url: permalink(project.id, entry.id) })
  t.equal(head.status, 200, 'HEAD works too')
})

t.test('the list and both feeds link each entry to its permalink, in the locale asked for', async (t) => {
  const project = await createProject()
  const entries = []
  for (let i = 0; i < 3; i++) entries.push(await create(t, project.key, { title: `Entry ${i}`, status: 'published', published_at: `202${i}-01-01T00:00:00.000Z` }))
  const oldest = entries[0]!
  // On page 2 of a list of one a page: the permalink does not depend on where the entry is listed.
  const page2 = await load(t, `/portal/${project.id}/changelog?limit=1&offset=2`)
  t.strictSame(articleIds(page2.raw), [oldest.id])
  t.match(page2.raw, new RegExp(`<h2><a href="${permalink(project.id, oldest.id)}">Entry 0</a></h2>`), 'the list links the entry to its permalink')
  const fr = await load(t, `/portal/${project.id}/changelog?locale=fr`)
  t.match(fr.raw, new RegExp(`<h2><a href="${permalink(project.id, oldest.id)}\\?locale=fr">`), 'keeping the locale')

  const atom = await load(t, `/portal/${project.id}/changelog.atom?locale=fr&label=x`)
  t.equal(atom.status, 200)
  const json = await load(t, `/portal/${project.id}/changelog.json`)
  t.strictSame(
    json.json.items.map((item: { url: string }) => item.url),
    [...entries].reverse().map((e) => permalink(project.id, e.id)),
    'JSON Feed items link to the permalinks',
  )
  const atomAll = await load(t, `/portal/${project.id}/changelog.atom?locale=fr`)
  const links = [...atomAll.raw.matchAll(/<link rel="alternate" type="text\/html" href="([^"]+)"\/>/g)].map((m) => m[1]!.replace(/&amp;/g, '&'))
  t.strictSame(links.slice(1), [...entries].reverse().map((e) => `${permalink(project.id, e.id)}?locale=fr`), 'Atom entries link to the permalinks, in the feed’s locale')
  for (const link of links.slice(1)) t.equal((await load(t, link)).status, 200, `${link} opens`)
})

t.test('?locale= shows the translation where one exists, in its language, else the base', async (t) => {
  const project = await createProject()
  const entry = await create(t, project.key, { title: 'Dark mode', body: 'Follows the *system*.', status: 'published' })
  const patch = await call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${entry.id}`, key: project.key, body: { locale: 'pt-BR', title: 'Modo escuro', body: 'Segue o *sistema*.' } })
  t.equal(patch.status, 200)
  for (const locale of ['pt-BR', 'pt-br', 'PT-BR']) {
    const res = await load(t, `${permalink(project.id, entry.id)}?locale=${locale}`)
    t.equal(res.status, 200)
    t.match(res.raw, /<html lang="pt-BR">/, `${locale}: <html lang> is the translation's`)
    t.match(res.raw, /<h1>Modo escuro<\/h1>/, `${locale}: the translated title`)
    t.match(res.raw, /<em>sistema<\/em>/, `${locale}: the translated body`)
    t.match(res.raw, /<header lang="en">/, `${locale}: the page's own words are marked English`)
    t.match(res.raw, new RegExp(`href="/portal/${project.id}/changelog\\?locale=pt-BR"`), `${locale}: the list link keeps the locale, in its conventional case`)
  }
  const fallback = await load(t, `${permalink(project.id, entry.id)}?locale=fr`)
  t.match(fallback.raw, /<html lang="en">/, 'no translation: the base locale')
  t.match(fallback.raw, /<h1>Dark mode<\/h1>/)
  const bad = await load(t, `${permalink(project.id, entry.id)}?locale=not_a_locale`)
  t.equal(bad.status, 400, 'a locale that is not BCP 47 is 400, as on the list')
  // A link from a newsletter or a network carries parameters of theirs (the portal tag's rule).
  const tracked = await load(t, `${permalink(project.id, entry.id)}?utm_source=newsletter&fbclid=IwAR0&label=new&utm_campaign=caf%E9&%FF=1`)
  const plain = await load(t, permalink(project.id, entry.id))
  t.same([tracked.status, tracked.headers.etag], [200, plain.headers.etag], 'parameters the permalink does not define are ignored, whatever their bytes (a Latin-1 mailer\'s): the same page')
  t.equal((await load(t, `${permalink(project.id, entry.id)}?locale=%FF`)).status, 400, 'one it defines is still held to percent-encoded UTF-8')
})

t.test('drafts, scheduled, deleted and unpublished entries, other projects’ entries and odd ids are all one 404 page', async (t) => {
  const project = await createProject()
  const other = await createProject()
  const published = await create(t, project.key, { title: 'Published', status: 'published' })
  const draft = await create(t, project.key, { title: 'Draft' })
  const scheduled = await create(t, project.key, { title: 'Scheduled', status: 'scheduled', published_at: new Date(Date.now() + 3_600_000).toISOString() })
  const deleted = await create(t, project.key, { title: 'Deleted', status: 'published' })
  t.equal((await call(t, await testApp(), { method: 'DELETE', url: `/v1/changelog/${deleted.id}`, key: project.key })).status, 204)
  const unpublished = await create(t, project.key, { title: 'Unpublished', status: 'published' })
  t.equal((await call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${unpublished.id}`, key: project.key, body: { status: 'draft' } })).status, 200)
  const foreign = await create(t, other.key, { title: 'Foreign', status: 'published' })

  const urls = {
    draft: permalink(project.id, draft.id),
    scheduled: permalink(project.id, scheduled.id),
    deleted: permalink(project.id, deleted.id),
    unpublished: permalink(project.id, unpublished.id),
    "another project's entry": permalink(project.id, foreign.id),
    'an entry under another project': permalink(other.id, published.id),
    'an unknown project': permalink('prj_AAAAAAAAAAAAAAAAAAAAA', published.id),
    'an unknown entry': permalink(project.id, 'ch_AAAAAAAAAAAAAAAAAAAAA'),
    'an entry id of another prefix': permalink(project.id, `bp_${published.id.slice(3)}`),
    'a short entry id': permalink(project.id, 'ch_short'),
    'a project id of another shape': permalink('nope', published.id),
    'a segment longer than any id': permalink(project.id, 'x'.repeat(300)),
    'with a locale': `${permalink(project.id, draft.id)}?locale=fr`,
  }
  let body: string | undefined
  for (const [what, url] of Object.entries(urls)) {
    const res = await load(t, url)
    t.equal(res.status, 404, `${what}: 404`)
    t.match(res.headers['content-type'], /^text\/html/, `${what}: a page`)
    t.match(res.raw, /<h1>Entry not found<\/h1>/, `${what}: says so`)
    t.notMatch(res.raw, /Draft|Scheduled|Deleted|Unpublished|Foreign/, `${what}: shows nothing of the entry`)
    t.notOk(res.headers.etag, `${what}: no ETag`)
    body ??= res.raw
    t.equal(res.raw, body, `${what}: the same page as every other 404`)
  }
  t.equal((await load(t, permalink(project.id, published.id))).status, 200, 'the published one opens')
})
