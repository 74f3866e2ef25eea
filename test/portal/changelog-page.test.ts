// The public changelog page: exactly the API's published list, as HTML anyone can load
// without a key, with bodies rendered so that nothing in them runs.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { scheduledTimeArrives } from '../helpers/db.js'

type T = Parameters<typeof call>[0]

async function create(t: T, key: string, body: object): Promise<{ id: string }> {
  const res = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body })
  t.equal(res.status, 201)
  return res.json.data
}

const load = async (t: T, url: string, headers: Record<string, string> = {}) => call(t, await testApp(), { url, headers })

/** The entry ids on a page, in the order shown. */
const articleIds = (page: string) => [...page.matchAll(/<article id="([^"]+)"/g)].map((m) => m[1])
/** The href of the link with this rel, as a browser would read it (entities decoded). */
const linkHref = (page: string, rel: string) =>
  [...page.matchAll(/<a href="([^"]*)" rel="([^"]*)"/g)].find((m) => m[2] === rel)?.[1]?.replace(/&amp;/g, '&')

t.test('the page shows exactly the published entries the API lists, newest first, without a key', async (t) => {
  const project = await createProject({ name: 'Acme & Sons' })
  const other = await createProject()
  const old = await create(t, project.key, { title: 'Old', status: 'published', published_at: '2021-01-01T00:00:00.000Z' })
  const recent = await create(t, project.key, { title: 'Recent', status: 'published', published_at: '2024-01-01T00:00:00.000Z', labels: ['New'] })
  const now = await create(t, project.key, { title: 'Now', body: 'Every *screen* follows your theme.', status: 'published' })
  await create(t, project.key, { title: 'Draft entry' })
  await create(t, project.key, { title: 'Future entry', status: 'scheduled', published_at: new Date(Date.now() + 3_600_000).toISOString() })
  await create(t, other.key, { title: 'Other project entry', status: 'published' })

  const res = await load(t, `/portal/${project.id}/changelog`)
  t.equal(res.status, 200)
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8$/)
  const api = await call(t, await testApp(), { url: '/v1/changelog', key: project.key })
  t.strictSame(articleIds(res.raw), api.json.data.map((e: { id: string }) => e.id), 'the same entries in the same order as GET /v1/changelog')
  t.strictSame(articleIds(res.raw), [now.id, recent.id, old.id])
  t.notMatch(res.raw, /Draft entry|Future entry|Other project entry/, 'no draft, no scheduled entry, nothing of another project')
  t.match(res.raw, /<title>Acme &amp; Sons changelog<\/title>/, 'the project name is shown, escaped')
  t.match(res.raw, /<em>screen<\/em>/, 'the body is rendered Markdown')
  t.match(res.raw, /<span class="label">new<\/span>/, 'labels are shown')
  t.match(res.raw, /<time datetime="2024-01-01T00:00:00.000Z">January 1, 2024<\/time>/)
  t.match(res.raw, /<link rel="alternate" type="application\/atom\+xml"[^>]*href="\/portal\/prj_\w+\/changelog\.atom"/, 'feeds are discoverable')
  t.notMatch(res.raw, /<script/i, 'the page has no script')
  t.notMatch(res.raw, new RegExp(project.key), 'no API key')
  t.notOk(res.headers['access-control-allow-origin'], 'the page is not a feed: no CORS header')
})

t.test('the page shows a version only where one was given; the API reads 1.0.0 for the others', async (t) => {
  const { id, key } = await createProject()
  const app = await testApp()
  const at = (day: number) => `2025-01-0${day}T00:00:00.000Z`
  const unversioned = await create(t, key, { title: 'No version', status: 'published', published_at: at(1) })
  const explicitDefault = await create(t, key, { title: 'Explicit default', version: '1.0.0', status: 'published', published_at: at(2) })
  const versioned = await create(t, key, { title: 'Versioned', version: '2.1.0-beta.1', status: 'published', published_at: at(3) })
  /** The version each entry's meta line shows, null for none. */
  const shown = async () => {
    const page = (await load(t, `/portal/${id}/changelog`)).raw
    const versions = new Map<string, string | null>()
    for (const [, entry, meta] of page.matchAll(/<article id="([^"]+)"[\s\S]*?<p class="meta">([\s\S]*?)<\/p>/g)) {
      versions.set(entry!, /<span lang="en">Version<\/span> ([^ <]+)/.exec(meta!)?.[1] ?? null)
    }
    return Object.fromEntries(versions)
  }
  const read = async (entry: string) => (await call(t, app, { url: `/v1/changelog/${entry}`, key })).json.data.version

  t.strictSame(await shown(), { [versioned.id]: '2.1.0-beta.1', [explicitDefault.id]: '1.0.0', [unversioned.id]: null }, 'a version sent is shown, even 1.0.0; none sent, none shown')
  t.equal(await read(unversioned.id), '1.0.0', 'the API reads the default for an entry without one')
  t.equal(await read(explicitDefault.id), '1.0.0')

  const patched = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${unversioned.id}`, key, body: { version: '3.0.0' } })
  t.equal(patched.json.data.version, '3.0.0')
  t.equal((await shown())[unversioned.id], '3.0.0', 'a version given by PATCH is shown')
  const other = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${unversioned.id}`, key, body: { title: 'Renamed' } })
  t.equal(other.json.data.version, '3.0.0', 'a PATCH without version keeps it')
  const cleared = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${unversioned.id}`, key, body: { version: null } })
  t.equal(cleared.status, 200)
  t.equal(cleared.json.data.version, '1.0.0', 'null takes it back to none given: the API reads the default')
  t.equal((await shown())[unversioned.id], null, 'and the page shows none')
  const translated = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${versioned.id}`, key, body: { locale: 'fr', title: 'Versionnée', version: '2.1.0' } })
  t.equal(translated.json.data.version, '2.1.0', 'the version is shared by every locale')
  t.equal((await shown())[versioned.id], '2.1.0')
})

t.test('a scheduled entry appears on the page by itself once its time has passed', async (t) => {
  const { id, key } = await createProject()
  const at = new Date(Date.now() + 3_600_000).toISOString()
  const soon = await create(t, key, { title: 'Soon', status: 'scheduled', published_at: at })
  t.strictSame(articleIds((await load(t, `/portal/${id}/changelog`)).raw), [], 'absent while scheduled')
  // No job publishes it: the list compares published_at with now() when it runs.
  await scheduledTimeArrives(soon.id)
  t.strictSame(articleIds((await load(t, `/portal/${id}/changelog`)).raw), [soon.id], 'present once the time has passed')
})

t.test('?locale= shows translations where they exist and the base locale elsewhere, like the API', async (t) => {
  const { id, key } = await createProject()
  const translated = await create(t, key, { title: 'Dark mode', body: 'Follows the system.', status: 'published', published_at: '2025-02-01T00:00:00.000Z' })
  const untranslated = await create(t, key, { title: 'Offline', status: 'published', published_at: '2025-01-01T00:00:00.000Z' })
  const patch = await call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${translated.id}`, key, body: { locale: 'pt-BR', title: 'Modo escuro', body: 'Segue o *sistema*.' } })
  t.equal(patch.status, 200)

  for (const locale of ['pt-BR', 'PT-br']) {
    const res = await load(t, `/portal/${id}/changelog?locale=${locale}`)
    t.equal(res.status, 200)
    t.match(res.raw, new RegExp(`<article id="${translated.id}" lang="pt-BR">\\s*<h2><a href="[^"]*">Modo escuro</a></h2>`), `${locale}: the translation, marked with its language`)
    t.match(res.raw, /Segue o <em>sistema<\/em>\./)
    t.match(res.raw, new RegExp(`<article id="${untranslated.id}" lang="en">\\s*<h2><a href="[^"]*">Offline</a></h2>`), `${locale}: no translation, the base locale`)
    t.match(res.raw, /1 de fevereiro de 2025/, 'dates in the entry language')
    t.match(res.raw, new RegExp(`href="/portal/${id}/changelog\\.atom\\?locale=pt-BR"`), 'the feed links keep the locale, in its conventional case')
  }
  const base = await load(t, `/portal/${id}/changelog`)
  t.match(base.raw, /<h2><a href="[^"]*">Dark mode<\/a><\/h2>/, 'without a locale, the base locale')
})

t.test('limit and offset page through the entries with next and previous links that keep the locale', async (t) => {
  const { id, key } = await createProject()
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.unshift((await create(t, key, { title: `E${i}`, status: 'published', published_at: `2025-0${i + 1}-01T00:00:00.000Z` })).id)

  let url: string | undefined = `/portal/${id}/changelog?locale=fr&limit=2`
  const pages: string[][] = []
  const prevs: (string | undefined)[] = []
  while (url) {
    const res = await load(t, url)
    t.equal(res.status, 200)
    pages.push(articleIds(res.raw) as string[])
    prevs.push(linkHref(res.raw, 'prev'))
    url = linkHref(res.raw, 'next')
    if (pages.length > 5) break
  }
  t.strictSame(pages, [ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)], 'following "next" walks the list, newest first')
  t.strictSame(prevs, [undefined, `/portal/${id}/changelog?locale=fr&limit=2`, `/portal/${id}/changelog?locale=fr&limit=2&offset=2`], '"previous" goes back a page')

  const api = await call(t, await testApp(), { url: '/v1/changelog?limit=2&offset=2', key })
  t.strictSame(pages[1], api.json.data.map((e: { id: string }) => e.id), 'a page is the API page with the same limit and offset')

  const past = await load(t, `/portal/${id}/changelog?offset=40`)
  t.equal(past.status, 200)
  t.match(past.raw, /No entries on this page/)
  t.match(past.raw, new RegExp(`<a href="/portal/${id}/changelog">See the newest entries</a>`))
  const empty = await load(t, `/portal/${(await createProject()).id}/changelog`)
  t.match(empty.raw, /No entries yet\./)
  t.notMatch(empty.raw, /rel="(next|prev)"/, 'one page: no page links')

  for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'limit=x', 'limit=2&limit=3']) {
    const res = await load(t, `/portal/${id}/changelog?${bad}`)
    t.equal(res.status, 400, `${bad} is refused like on the API`)
    t.equal(res.json.code, 'validation_failed')
  }
})

t.test('Markdown is rendered safely: no raw HTML, no script, no javascript: links survive', async (t) => {
  const { id, key } = await createProject()
  const hostile = [
    '<script>alert(1)</script>',
    '<img src=x onerror=alert(2)>',
    '<a href="javascript:alert(3)">raw link</a>',
    '[a](javascript:alert(4))',
    '[b](JaVaScRiPt:alert(5))',
    '[c](java&#115;cript:alert(6))',
    '[d](<java\tscript:alert(7)>)',
    '![e](javascript:alert(8))',
    '[f](data:text/html;base64,PHNjcmlwdD5hbGVydCg5KTwvc2NyaXB0Pg==)',
    '[g](vbscript:msgbox(10))',
    '<https://ok.example/auto>',
    '[safe](https://ok.example/a?b=1&c=2 "a \\"title\\"")',
    '[mail](mailto:team@example.com)',
    'Entities stay text: &lt;b&gt;not bold&lt;/b&gt; &amp; &copy;',
    '<svg onload=alert(11)>',
    '`<script>in code</script>`',
    '```\n<iframe src="https://evil.example"></iframe>\n```',
  ].join('\n\n')
  await create(t, key, { title: '<script>alert("title")</script> & <b>bold</b>', body: hostile, status: 'published', labels: ['<i>x</i>'] })

  const res = await load(t, `/portal/${id}/changelog`)
  t.equal(res.status, 200)
  const page = res.raw
  t.notMatch(page, /<script/i, 'no script element')
  t.notMatch(page, /<(img|svg|iframe)\b/i, 'no element from raw HTML')
  t.notMatch(page, /<[^>]*\son\w+\s*=/i, 'no event handler attribute in any tag')
  const hrefs = [...page.matchAll(/\s(?:href|src)="([^"]*)"/g)].map((m) => m[1]!)
  t.same(hrefs.filter((h) => !/^(https?:|mailto:|\/)/.test(h)), [], 'every link is http(s), mailto or this site')
  t.match(page, /<h2><a href="[^"]*">&lt;script&gt;alert\(&quot;title&quot;\)&lt;\/script&gt; &amp; &lt;b&gt;bold&lt;\/b&gt;<\/a><\/h2>/, 'the title is text')
  t.match(page, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'tags in a body are shown as text')
  t.match(page, /<a href="https:\/\/ok.example\/a\?b=1&amp;c=2" title="a &quot;title&quot;">safe<\/a>/, 'an http link survives, escaped')
  t.match(page, /<a href="https:\/\/ok.example\/auto">/, 'an autolink survives')
  t.match(page, /<a href="mailto:team@example.com">mail<\/a>/)
  t.match(page, /\[a\]\(javascript:alert\(4\)\)/, 'a javascript: link stays Markdown text')
  t.match(page, /Entities stay text: &lt;b&gt;not bold&lt;\/b&gt; &amp; ©/, 'entities are decoded to text, never to markup')
  t.match(page, /<code>&lt;script&gt;in code&lt;\/script&gt;<\/code>/, 'code shows tags as text')
})

t.test('an unknown project, an id of the wrong shape or another kind of id is a 404 page', async (t) => {
  for (const projectId of ['prj_000000000000000000000', 'prj_x', 'bp_000000000000000000000', 'not-an-id', 'prj_000000000000000000000%00']) {
    const res = await load(t, `/portal/${projectId}/changelog`)
    t.equal(res.status, 404, projectId)
    t.match(res.headers['content-type'], /^text\/html/)
    t.match(res.raw, /<h1>Changelog not found<\/h1>/)
  }
})

t.test('the page revalidates with If-None-Match and is cacheable by shared caches', async (t) => {
  const { id, key } = await createProject()
  await create(t, key, { title: 'One', status: 'published' })
  const first = await load(t, `/portal/${id}/changelog`)
  t.equal(first.headers['cache-control'], 'public, max-age=60')
  t.notOk(first.headers['last-modified'], 'a page of a list has no Last-Modified')
  const etag = String(first.headers.etag)
  const again = await load(t, `/portal/${id}/changelog`, { 'if-none-match': etag })
  t.equal(again.status, 304)
  t.equal(again.raw, '')
  await create(t, key, { title: 'Two', status: 'published' })
  const changed = await load(t, `/portal/${id}/changelog`, { 'if-none-match': etag })
  t.equal(changed.status, 200, 'a new entry changes the page')
  t.not(changed.headers.etag, etag)
  const other = await load(t, `/portal/${id}/changelog?locale=fr`, { 'if-none-match': String(changed.headers.etag) })
  t.equal(other.status, 200, 'another URL is another representation')
})

t.test('the page runs no script, cannot be framed and sends no Referer, even on a 404', async (t) => {
  const { id, key } = await createProject()
  await create(t, key, { title: 'One', status: 'published' })
  for (const url of [`/portal/${id}/changelog`, '/portal/prj_000000000000000000000/changelog']) {
    const res = await load(t, url)
    const csp = String(res.headers['content-security-policy'])
    t.match(csp, /default-src 'none'/, url)
    t.notMatch(csp, /script-src/, `${url}: no script source is allowed`)
    t.match(csp, /frame-ancestors 'none'/, url)
    t.equal(res.headers['x-frame-options'], 'DENY', url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
  }
})
