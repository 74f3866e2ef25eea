// The public page's and feeds' validators come from one indexed statement, never from the body:
// a 304 builds nothing and reads no body, and the ETag still changes with everything shown.
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { defaults } from '../../src/config.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { ADMIN_TOKEN, call, createProject } from '../helpers/app.js'
import { explainPlan, indexScans, sortsBeyondAPage, testDatabase } from '../helpers/db.js'

type T = Parameters<typeof call>[0]

/** How often the portal built a body and read entries' HTML, through spies on the modules that do. */
const built = { page: 0, entryPage: 0, atom: 0, json: 0, bodies: 0 }
const builds = () => built.page + built.entryPage + built.atom + built.json + built.bodies

async function spiedApp(t: T): Promise<FastifyInstance> {
  const page = await import('../../src/portal/changelog-page.js')
  const feeds = await import('../../src/portal/feeds.js')
  const repos = await import('../../src/db/repos/index.js')
  const { buildApp } = await t.mockImport<typeof import('../../src/app.js')>('../../src/app.js', {
    '../../src/portal/changelog-page.js': {
      ...page,
      changelogPage: (...a: Parameters<typeof page.changelogPage>) => (built.page++, page.changelogPage(...a)),
      changelogEntryPage: (...a: Parameters<typeof page.changelogEntryPage>) => (built.entryPage++, page.changelogEntryPage(...a)),
    },
    '../../src/portal/feeds.js': {
      ...feeds,
      atomFeed: (...a: Parameters<typeof feeds.atomFeed>) => (built.atom++, feeds.atomFeed(...a)),
      jsonFeedText: (...a: Parameters<typeof feeds.jsonFeedText>) => (built.json++, feeds.jsonFeedText(...a)),
    },
    '../../src/db/repos/index.js': {
      ...repos,
      makeRepos: (...a: Parameters<typeof repos.makeRepos>) => {
        const made = repos.makeRepos(...a)
        const portalEntries = made.changelog.portalEntries
        made.changelog.portalEntries = (...b) => (built.bodies++, portalEntries(...b))
        return made
      },
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN }, await testDatabase())
  t.teardown(() => app.close())
  return app
}

/**
 * Loads each URL after an event: each must now differ from its last ETag (those `changes` names)
 * or still match it with a 304 that built nothing; then its new ETag must be current. With
 * `cacheControl`, every 200 and 304 must send it. `etags` holds each URL's current ETag.
 */
function etagChecker(t: T, app: FastifyInstance, urls: string[], { cacheControl }: { cacheControl?: string } = {}) {
  const etags = new Map<string, string>()
  const cachedAs = (res: { headers: Record<string, unknown> }, what: string) => {
    if (cacheControl !== undefined) t.equal(res.headers['cache-control'], cacheControl, what)
  }
  return Object.assign(async function check(event: string, changes: (url: string) => boolean) {
    for (const url of urls) {
      const before = etags.get(url)
      if (before !== undefined) {
        const buildsBefore = builds()
        const revalidated = await call(t, app, { url, headers: { 'if-none-match': before } })
        if (changes(url)) {
          t.equal(revalidated.status, 200, `${event}: ${url} changed`)
          t.not(revalidated.headers.etag, before, `${event}: ${url} has a new ETag`)
        } else {
          t.equal(revalidated.status, 304, `${event}: ${url} did not change`)
          t.equal(builds(), buildsBefore, `${event}: the 304 of ${url} built nothing and read no body`)
          cachedAs(revalidated, `${event}: the 304 keeps the caching`)
        }
      }
      const res = await call(t, app, { url })
      t.equal(res.status, 200)
      cachedAs(res, `${url}: cached as the list is`)
      etags.set(url, String(res.headers.etag))
      const buildsBefore = builds()
      const again = await call(t, app, { url, headers: { 'if-none-match': String(res.headers.etag) } })
      t.equal(again.status, 304, `${url}: its own ETag is current`)
      t.equal(builds(), buildsBefore, `${url}: the 304 built nothing and read no body`)
    }
  }, { etags })
}

t.test('a 304 builds no page or feed and reads no body; the ETag changes with everything shown', async (t) => {
  const app = await spiedApp(t)
  const { id: projectId, key } = await createProject({ name: 'Before' })
  const api = (method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: object) => call(t, app, { method, url, key, body })
  const write = async (method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: object) => {
    const res = await api(method, url, body)
    t.ok(res.status < 300, `${method} ${url} → ${res.status}`)
    return res.json?.data as { id: string }
  }

  const urls = [
    `/portal/${projectId}/changelog?limit=2`,
    `/portal/${projectId}/changelog?locale=fr&limit=2`,
    `/portal/${projectId}/changelog.atom`,
    `/portal/${projectId}/changelog.atom?locale=fr`,
    `/portal/${projectId}/changelog.json`,
    `/portal/${projectId}/changelog.json?locale=fr`,
  ]
  const check = etagChecker(t, app, urls)
  const all = () => true
  const fr = (url: string) => url.includes('locale=fr')

  await check('first load', all)
  const first = await write('POST', '/v1/changelog', { title: 'First', body: 'One', status: 'published', published_at: '2025-03-01T00:00:00Z' })
  await check('an entry published', all)
  await write('PATCH', `/v1/changelog/${first.id}`, { body: 'One, *edited*' })
  await check('an entry edited', all)
  // The page shows a version only where one was given: giving one, or taking it back, changes
  // what is shown, and the state sees it through updated_at.
  await write('PATCH', `/v1/changelog/${first.id}`, { version: '1.0.0' })
  await check('a version given (the default value, sent)', all)
  await write('PATCH', `/v1/changelog/${first.id}`, { version: null })
  await check('a version taken back', all)
  await write('PATCH', `/v1/changelog/${first.id}`, { locale: 'fr', title: 'Premier', body: 'Un' })
  // A translation's write also moves the entry's updated_at, which the feeds show in every locale.
  await check('a translation written', all)
  const removed = await api('DELETE', `/v1/changelog/${first.id}?locale=fr`)
  t.equal(removed.status, 204)
  await check('a translation deleted', fr)
  const second = await write('POST', '/v1/changelog', { title: 'Second', status: 'published', published_at: '2025-02-01T00:00:00Z' })
  await check('a second entry', all)
  // The page shows two entries; a third, older one only adds the link to the next page.
  const third = await write('POST', '/v1/changelog', { title: 'Third', status: 'published', published_at: '2025-01-01T00:00:00Z' })
  await check('an entry beyond the page (its "Older entries" link)', all)
  await write('PATCH', `/v1/changelog/${second.id}`, { status: 'draft' })
  await check('an entry unpublished', all)
  await write('DELETE', `/v1/changelog/${third.id}`)
  await check('an entry deleted', all)

  const scheduled = await write('POST', '/v1/changelog', { title: 'Later', status: 'scheduled', published_at: new Date(Date.now() + 3_600_000).toISOString() })
  await check('an entry scheduled', () => false)
  // Its time passes with no write: move it into the past, as the clock would.
  const { db } = await testDatabase()
  await db.execute(sql`update changelog_entries set published_at = now() - interval '1 second' where id = ${scheduled.id}`)
  await check('a scheduled entry becoming visible', all)

  const renamed = await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${projectId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name: 'After' } })
  t.equal(renamed.status, 200)
  await check('the project renamed', all)
  t.match((await call(t, app, { url: `/portal/${projectId}/changelog.json` })).json, { title: 'After changelog' })
})

t.test('a label is part of the ETag and of the state: a filtered page has its own, which follows the label', async (t) => {
  const app = await spiedApp(t)
  const { id: projectId, key } = await createProject()
  const write = async (method: 'POST' | 'PATCH', url: string, body: object) => {
    const res = await call(t, app, { method, url, key, body })
    t.ok(res.status < 300, `${method} ${url} → ${res.status}`)
    return res.json.data as { id: string }
  }
  const path = `/portal/${projectId}/changelog`
  const unfiltered = [`${path}?limit=2`, `${path}.atom`, `${path}.json`]
  const labelled = [`${path}?label=new&limit=2`, `${path}.atom?label=new`, `${path}.json?label=new`]
  const check = etagChecker(t, app, [...unfiltered, ...labelled])
  const all = () => true
  const isLabelled = (url: string) => url.includes('label=')
  const etag = async (url: string) => String((await call(t, app, { url })).headers.etag)

  await check('first load', all)
  const a = await write('POST', '/v1/changelog', { title: 'A', labels: ['New'], status: 'published', published_at: '2025-03-01T00:00:00Z' })
  await check('an entry with the label published', all)
  // Both show exactly entry A: the same state, yet different documents (the filtered one's links keep the label).
  for (const [i, url] of unfiltered.entries()) t.not(await etag(labelled[i]!), await etag(url), `${labelled[i]} has its own ETag`)
  t.equal(await etag(`${path}?label=%20NEW%20&limit=2`), await etag(labelled[0]!), 'the label counts as normalised: one page, one ETag')

  const b = await write('POST', '/v1/changelog', { title: 'B', status: 'published', published_at: '2025-02-01T00:00:00Z' })
  await check('an entry without the label published', (url) => !isLabelled(url))
  await write('PATCH', `/v1/changelog/${b.id}`, { labels: ['new'] })
  await check('an entry gaining the label', all)
  await write('PATCH', `/v1/changelog/${a.id}`, { labels: ['fix'] })
  await check('an entry losing the label', all)
  await write('PATCH', `/v1/changelog/${a.id}`, { body: 'Edited' })
  await check('an entry without the label edited', (url) => !isLabelled(url))
  await write('POST', '/v1/changelog', { title: 'Draft', labels: ['new'] })
  await check('a draft with the label', () => false)

  const page = await call(t, app, { url: labelled[0]! })
  t.match(page.raw, new RegExp(`<article id="${b.id}"`), 'the labelled page shows the entry that gained the label')
  t.notMatch(page.raw, new RegExp(`<article id="${a.id}"`), 'and not the one that lost it')
})

t.test('the state of a page is one statement on the project key and the list index, sorting no more than the page', async (t) => {
  const { id } = await createProject()
  const repos = makeRepos((await testDatabase()).db)
  for (const locale of [undefined, 'fr']) {
    for (const offset of [0, 40]) {
      for (const label of [undefined, 'new']) {
        const plan = await explainPlan(repos.changelog.portalStateQuery(id, { locale, label, limit: 50, offset }))
        t.match(plan, /Index (Only )?Scan using changelog_entries_project_published_idx/, `the list index (locale ${locale}, offset ${offset}, label ${label})`)
        if (label) t.match(indexScans(plan).find((s) => s.index === 'changelog_entries_project_published_idx')?.filter, /labels @>/, 'the label, a filter on the list index in its order')
        t.match(plan, /Index Scan using projects_pkey/, 'the project by its key')
        if (locale) t.match(plan, /Index Scan using changelog_translations_entry_id_locale_key_pk/, 'translations by their key')
        t.notOk(sortsBeyondAPage(plan), 'no sort beyond the page')
        t.notMatch(plan, /Seq Scan/)
      }
    }
  }
})

t.test("an entry's permalink revalidates like the list: a 304 reads no body, and the ETag follows what the page shows", async (t) => {
  const app = await spiedApp(t)
  const { id: projectId, key } = await createProject({ name: 'Before' })
  const write = async (method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: object) => {
    const res = await call(t, app, { method, url, key, body })
    t.ok(res.status < 300, `${method} ${url} → ${res.status}`)
    return res.json?.data as { id: string }
  }
  const entry = await write('POST', '/v1/changelog', { title: 'First', body: 'One', status: 'published', published_at: '2025-03-01T00:00:00Z' })
  const base = `/portal/${projectId}/changelog/${entry.id}`
  const urls = [base, `${base}?locale=fr`]
  const check = etagChecker(t, app, urls, { cacheControl: 'public, max-age=60' })
  const { etags } = check
  const all = () => true
  const fr = (url: string) => url.includes('locale=fr')

  await check('first load', all)
  t.not(etags.get(urls[0]!), etags.get(urls[1]!), 'each locale asked for has its own ETag')
  t.not(etags.get(base), String((await call(t, app, { url: `/portal/${projectId}/changelog` })).headers.etag), 'the permalink is not the list')
  await write('POST', '/v1/changelog', { title: 'Another', status: 'published' })
  await check('another entry published', () => false)
  await write('PATCH', `/v1/changelog/${entry.id}`, { body: 'One, *edited*' })
  await check('the entry edited', all)
  await write('PATCH', `/v1/changelog/${entry.id}`, { locale: 'fr', title: 'Premier', body: 'Un' })
  await check('a translation written', all)
  t.match((await call(t, app, { url: urls[1]! })).raw, /<h1>Premier<\/h1>/, 'the translation shown')
  t.equal((await call(t, app, { method: 'DELETE', url: `/v1/changelog/${entry.id}?locale=fr`, key })).status, 204)
  await check('a translation deleted', fr)
  const renamed = await call(t, app, { method: 'PATCH', url: `/admin/v1/projects/${projectId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { name: 'After' } })
  t.equal(renamed.status, 200)
  await check('the project renamed', all)

  // Gone from the public, the page is a 404 even to a client holding its old ETag.
  await write('PATCH', `/v1/changelog/${entry.id}`, { status: 'draft' })
  for (const url of urls) t.equal((await call(t, app, { url, headers: { 'if-none-match': etags.get(url)! } })).status, 404, `unpublished: ${url} is 404`)
  await write('PATCH', `/v1/changelog/${entry.id}`, { status: 'published' })
  await check('published again', all)
  await write('DELETE', `/v1/changelog/${entry.id}`)
  for (const url of urls) t.equal((await call(t, app, { url, headers: { 'if-none-match': etags.get(url)! } })).status, 404, `deleted: ${url} is 404`)
})

t.test("a permalink's state is one statement on primary keys", async (t) => {
  const { id } = await createProject()
  const repos = makeRepos((await testDatabase()).db)
  for (const locale of [undefined, 'fr']) {
    const plan = await explainPlan(repos.changelog.portalEntryStateQuery(id, 'ch_AAAAAAAAAAAAAAAAAAAAA', locale))
    // The primary key, or an index on (project_id, ..., id) whose condition holds both: one row either way.
    t.match(plan, /Index Scan using changelog_entries_\w+ on changelog_entries[^\n]*\n\s*Index Cond: \([^\n]*\bid = 'ch_AAAAAAAAAAAAAAAAAAAAA'/, `the entry by its id, in an index (locale ${locale})`)
    t.match(plan, /Index Scan using projects_pkey/, 'the project by its key')
    if (locale) t.match(plan, /Index Scan using changelog_translations_entry_id_locale_key_pk/, 'the translation by its key')
    t.notMatch(plan, /Seq Scan/)
  }
})
