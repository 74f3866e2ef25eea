// The page and feeds show the HTML stored when a body was written: reading renders nothing.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { defaults } from '../../src/config.js'
import { buildApp } from '../../src/app.js'
import { MarkdownRenderer } from '../../src/portal/markdown-rendering.js'
import { ADMIN_TOKEN, call, createProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const rowsOf = (result: unknown) => (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, string>[]

/** A renderer that counts its renders. */
class CountingRenderer extends MarkdownRenderer {
  renders = 0
  override render(source: string): Promise<string | null> {
    this.renders++
    return super.render(source)
  }
}

t.test('writes render and store the HTML; the page and both feeds show it and render nothing', async (t) => {
  const markdown = new CountingRenderer()
  const database = await testDatabase()
  const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN }, database, { markdown })
  t.teardown(() => app.close())
  const { id: projectId, key } = await createProject()

  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'T', body: 'Base *one*', status: 'published' } })
  const id = created.json.data.id as string
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body: { body: 'Base *two*' } })
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body: { locale: 'fr', title: 'Titre', body: 'Traduit *un*' } })
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body: { locale: 'de', title: 'Nur Titel' } })
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body: { labels: ['x'] } })
  t.equal(markdown.renders, 3, 'one render per body written (a PATCH without a body renders nothing)')

  const { db } = database
  const translations = rowsOf(await db.execute(sql`select locale_key, body_html from changelog_translations where entry_id = ${id} order by 1`))
  t.strictSame(translations.map((r) => [r.locale_key, r.body_html]), [
    ['de', ''],
    ['fr', '<p>Traduit <em>un</em></p>\n'],
  ], 'each translation holds its own HTML')
  const [entry] = rowsOf(await db.execute(sql`select body_html from changelog_entries where id = ${id}`))
  t.equal(entry!.body_html, '<p>Base <em>two</em></p>\n', 'the entry holds the HTML of its latest body')

  // Mark the stored HTML: what the portal shows must be it, not a rendering of the Markdown.
  await db.execute(sql`update changelog_entries set body_html = '<p>stored base</p>' where id = ${id}`)
  await db.execute(sql`update changelog_translations set body_html = '<p>stored fr</p>' where entry_id = ${id} and locale_key = 'fr'`)
  const before = markdown.renders
  for (const [suffix, expected] of [['', 'stored base'], ['?locale=fr', 'stored fr']] as const) {
    for (const path of ['changelog', 'changelog.atom', 'changelog.json']) {
      const res = await call(t, app, { url: `/portal/${projectId}/${path}${suffix}` })
      t.equal(res.status, 200)
      t.ok(res.raw.includes(expected), `${path}${suffix} shows the stored HTML`)
      t.notOk(/<em>|&lt;em&gt;/.test(res.raw), `${path}${suffix} shows no rendering of the Markdown`)
      const again = await call(t, app, { url: `/portal/${projectId}/${path}${suffix}`, headers: { 'if-none-match': String(res.headers.etag) } })
      t.equal(again.status, 304)
    }
  }
  t.equal(markdown.renders, before, 'no read rendered anything')
})

t.test('a row still without HTML shows its Markdown as text, and migrate renders it', async (t) => {
  const database = await testDatabase()
  const { db } = database
  const { id: projectId, key } = await createProject()
  const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN }, database)
  t.teardown(() => app.close())
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Old', body: 'An *old* <b>row</b>', status: 'published' } })
  const id = created.json.data.id as string
  await call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body: { locale: 'fr', title: 'Vieux', body: 'Une *vieille* ligne' } })
  // As a row written before the column existed, or by an older instance during a deploy.
  await db.execute(sql`update changelog_entries set body_html = null where id = ${id}`)
  await db.execute(sql`update changelog_translations set body_html = null where entry_id = ${id}`)

  const waiting = await call(t, app, { url: `/portal/${projectId}/changelog` })
  t.match(waiting.raw, /<p>An \*old\* &lt;b&gt;row&lt;\/b&gt;<\/p>/, 'shown as escaped text until it has HTML')
  const etag = String(waiting.headers.etag)

  // Two instances starting at once: both migrate, under the migration lock.
  await Promise.all([database.migrate(), database.migrate()])
  const page = await call(t, app, { url: `/portal/${projectId}/changelog`, headers: { 'if-none-match': etag } })
  t.equal(page.status, 200, 'the page changed with its HTML')
  t.match(page.raw, /<p>An <em>old<\/em> &lt;b&gt;row&lt;\/b&gt;<\/p>/, 'the entry has its HTML')
  const fr = await call(t, app, { url: `/portal/${projectId}/changelog.json?locale=fr` })
  t.equal(fr.json.items[0].content_html, '<p>Une <em>vieille</em> ligne</p>\n', 'the translation has its HTML')
})
