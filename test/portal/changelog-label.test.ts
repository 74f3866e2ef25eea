// ?label= on the public changelog page and both feeds (contract §8): the published entries with
// that label, as GET /v1/changelog?label= lists them, with links that keep the filter.
import { XMLParser, XMLValidator } from 'fast-xml-parser'
import t, { type Test } from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any

async function create(t: Test, key: string, body: object): Promise<{ id: string }> {
  const res = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body })
  t.equal(res.status, 201)
  return res.json.data
}
const load = async (t: Test, url: string) => call(t, await testApp(), { url })

const articleIds = (page: string) => [...page.matchAll(/<article id="([^"]+)"/g)].map((m) => m[1])
const linkHref = (page: string, rel: string) =>
  [...page.matchAll(/<a href="([^"]*)" rel="([^"]*)"/g)].find((m) => m[2] === rel)?.[1]?.replace(/&amp;/g, '&')
const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', parseTagValue: false, isArray: (name) => ['entry', 'link'].includes(name) })
function atom(t: Test, xml: string): Any {
  t.equal(XMLValidator.validate(xml), true, 'well-formed XML')
  return parser.parse(xml).feed
}
const link = (links: Any[], rel: string) => links.find((l: Any) => l['@rel'] === rel)?.['@href']
/** The entry ids of an Atom feed, from each entry's alternate link: its permalink. */
const entryIdOf = (href: string): string => href.split('?')[0]!.split('/').at(-1)!
const atomIds = (feed: Any): string[] => (feed.entry ?? []).map((e: Any) => entryIdOf(link(e.link, 'alternate')))

/** Three published entries labelled `new`, one `fix`, and a draft and a scheduled entry labelled `new`. */
async function seed(t: Test) {
  const project = await createProject()
  const { key } = project
  const published = (title: string, labels: string[], day: number) =>
    create(t, key, { title, labels, status: 'published', published_at: new Date(Date.UTC(2025, 0, day)).toISOString() })
  const oldest = await published('Oldest', ['New'], 1)
  const fix = await published('Fix', ['fix'], 2)
  const middle = await published('Middle', ['new', 'ui'], 3)
  const newest = await published('Newest', [' NEW '], 4)
  await create(t, key, { title: 'Draft', labels: ['new'] })
  await create(t, key, { title: 'Scheduled', labels: ['new'], status: 'scheduled', published_at: '2090-01-01T00:00:00Z' })
  return { project, labelled: [newest.id, middle.id, oldest.id], fix: fix.id }
}

t.test('the page shows the published entries with the label, as the API lists them, and its links keep it', async (t) => {
  const { project, labelled, fix } = await seed(t)
  const path = `/portal/${project.id}/changelog`
  const api = await call(t, await testApp(), { url: '/v1/changelog?label=new', key: project.key })
  const page = await load(t, `${path}?label=%20New%20`)
  t.equal(page.status, 200)
  t.strictSame(articleIds(page.raw), labelled, 'newest first, no draft, no scheduled entry, no other label')
  t.strictSame(articleIds(page.raw), api.json.data.map((e: { id: string }) => e.id), 'exactly GET /v1/changelog?label=')
  t.notMatch(page.raw, new RegExp(fix), 'not the entry labelled fix')
  t.match(page.raw, /Entries labelled <span class="label">new<\/span>/, 'says what it is filtered by')
  t.match(page.raw, new RegExp(`<a href="${path}">All entries</a>`), 'and links back to every entry')
  t.match(page.raw, new RegExp(`href="${path}\\.atom\\?label=new"`), 'the Atom feed of the label')
  t.match(page.raw, new RegExp(`href="${path}\\.json\\?label=new"`), 'the JSON Feed of the label')

  const first = await load(t, `${path}?label=new&locale=fr&limit=2`)
  t.strictSame(articleIds(first.raw), labelled.slice(0, 2))
  t.equal(linkHref(first.raw, 'next'), `${path}?locale=fr&label=new&limit=2&offset=2`, 'older entries keep the label and the locale')
  t.match(first.raw, new RegExp(`<a href="${path}\\?locale=fr">All entries</a>`), 'all entries keeps the locale')
  const second = await load(t, linkHref(first.raw, 'next')!)
  t.strictSame(articleIds(second.raw), labelled.slice(2))
  t.equal(linkHref(second.raw, 'prev'), `${path}?locale=fr&label=new&limit=2`, 'newer entries keep the label')
})

t.test('a label no entry has is an empty page and empty feeds, not a 404', async (t) => {
  const { project } = await seed(t)
  const path = `/portal/${project.id}/changelog`
  const page = await load(t, `${path}?label=nothing`)
  t.equal(page.status, 200)
  t.strictSame(articleIds(page.raw), [])
  t.match(page.raw, /No entries with this label yet\./)
  const feed = atom(t, (await load(t, `${path}.atom?label=nothing`)).raw)
  t.strictSame(atomIds(feed), [])
  const json = await load(t, `${path}.json?label=nothing`)
  t.equal(json.status, 200)
  t.strictSame(json.json.items, [])
})

t.test('a label outside the bounds of labels is a 400 on the page and the feeds, before an unknown project', async (t) => {
  const { id } = await createProject()
  for (const project of [id, 'prj_000000000000000000000']) {
    for (const suffix of ['', '.atom', '.json']) {
      for (const label of ['', '%20', 'a'.repeat(33), '%00', '%ZZ']) {
        const res = await load(t, `/portal/${project}/changelog${suffix}?label=${label}`)
        t.equal(res.status, 400, `${suffix || 'page'} label=${label}`)
      }
      const unknown = await load(t, `/portal/${project}/changelog${suffix}?label=${encodeURIComponent('İ'.repeat(17))}`)
      t.equal(unknown.status, project === id ? 200 : 404, 'a label no stored label can be: nothing matches (or no such project)')
    }
  }
})

t.test('the feeds hold the entries with the label, under an id and links of their own', async (t) => {
  const { project, labelled } = await seed(t)
  const path = `/portal/${project.id}/changelog`
  const plain = atom(t, (await load(t, `${path}.atom`)).raw)
  const filtered = atom(t, (await load(t, `${path}.atom?label=NEW`)).raw)
  t.strictSame(atomIds(filtered), labelled, 'Atom: the labelled entries, newest first')
  t.not(filtered.id, plain.id, 'a feed id of its own')
  t.equal(atom(t, (await load(t, `${path}.atom?label=new`)).raw).id, filtered.id, 'the same id however the label is written')
  t.equal(link(filtered.link, 'self'), `${path}.atom?label=new`, 'self is the filtered feed')
  t.equal(link(filtered.link, 'alternate'), `${path}?label=new`, 'alternate is the filtered page')
  const entryIds = new Map((plain.entry as Any[]).map((e) => [entryIdOf(link(e.link, 'alternate')), e.id]))
  for (const entry of filtered.entry as Any[]) {
    const id = entryIdOf(link(entry.link, 'alternate'))
    t.equal(entry.id, entryIds.get(id), 'entry ids do not depend on the filter')
  }

  const json = (await load(t, `${path}.json?label=new&locale=pt-BR`)).json
  t.strictSame(json.items.map((i: { id: string }) => i.id), labelled, 'JSON Feed: the labelled entries')
  t.equal(json.feed_url, `${path}.json?locale=pt-BR&label=new`)
  t.equal(json.home_page_url, `${path}?locale=pt-BR&label=new`)
  t.equal(json.items[0].url, `${path}/${labelled[0]}?locale=pt-BR`, "an item links to the entry's permalink, in the feed's locale")
})
