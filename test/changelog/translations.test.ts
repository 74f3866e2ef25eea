import { eq } from 'drizzle-orm'
import t from 'tap'
import { changelog_translations } from '../../src/db/schema.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

type T = Parameters<typeof call>[0]

async function create(t: T, key: string, body: object) {
  const res = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body })
  t.equal(res.status, 201)
  return res.json.data
}

const patch = async (t: T, key: string, id: string, body: object) => call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${id}`, key, body })
const get = async (t: T, key: string, path: string) => call(t, await testApp(), { url: `/v1/changelog${path}`, key })

async function translationRows(entryId: string) {
  const { db } = await testDatabase()
  return db.select().from(changelog_translations).where(eq(changelog_translations.entry_id, entryId))
}

t.test('a PATCH in another locale writes a translation and leaves the base content alone', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Dark mode', body: 'Follows the system.', locale: 'en' })
  const res = await patch(t, key, entry.id, { locale: 'pt-br', title: 'Modo escuro', body: 'Segue o sistema.' })
  t.equal(res.status, 200)
  t.match(res.json.data, { id: entry.id, title: 'Modo escuro', body: 'Segue o sistema.', locale: 'pt-BR' }, 'the response is in the locale written')
  t.ok(res.json.data.updated_at > entry.updated_at, 'a translation write moves updated_at')

  const base = await get(t, key, `/${entry.id}`)
  t.match(base.json.data, { title: 'Dark mode', body: 'Follows the system.', locale: 'en' }, 'the base is untouched')

  const rows = await translationRows(entry.id)
  t.match(rows, [{ locale_key: 'pt-br', locale: 'pt-BR', title: 'Modo escuro', body: 'Segue o sistema.' }])
})

t.test('a PATCH in the base locale, in any case, changes the base and makes no translation', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Modo escuro', locale: 'pt-BR' })
  const res = await patch(t, key, entry.id, { locale: 'PT-br', title: 'Tema escuro' })
  t.match(res.json.data, { title: 'Tema escuro', locale: 'pt-BR' })
  t.strictSame(await translationRows(entry.id), [])
})

t.test('title is required to create a translation, and only then', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Hello', body: 'World' })
  for (const body of [{ locale: 'fr', body: 'Monde' }, { locale: 'fr' }, { locale: 'fr', labels: ['x'] }]) {
    const res = await patch(t, key, entry.id, body)
    t.equal(res.status, 400, JSON.stringify(body))
    t.strictSame(res.json.errors, [{ in: 'body', path: '/title', message: 'is required to create the fr translation' }])
  }
  t.strictSame((await get(t, key, `/${entry.id}`)).json.data, entry, 'a refused translation changes nothing shared either')

  t.equal((await patch(t, key, entry.id, { locale: 'fr', title: 'Bonjour' })).status, 200)
  const res = await patch(t, key, entry.id, { locale: 'FR', body: 'Le monde' })
  t.equal(res.status, 200)
  t.match(res.json.data, { title: 'Bonjour', body: 'Le monde', locale: 'fr' }, 'a later write may send body alone; the title stays')
  t.equal((await translationRows(entry.id)).length, 1, 'one row per locale, whatever the case sent')
  const noop = await patch(t, key, entry.id, { locale: 'fr' })
  t.strictSame(noop.json.data, res.json.data, 'an existing locale alone is a no-op answered in that locale')
  t.equal((await get(t, key, `/${entry.id}`)).json.data.body, 'World')
})

t.test('labels, version and publishing sent with a translation apply to the entry', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Hello', labels: ['old'], version: '1.0.0' })
  const res = await patch(t, key, entry.id, { locale: 'de', title: 'Hallo', labels: ['Neu'], version: '1.1.0', status: 'published' })
  t.equal(res.status, 200)
  t.match(res.json.data, { title: 'Hallo', locale: 'de', labels: ['neu'], version: '1.1.0' })
  t.not(res.json.data.published_at, null)

  const base = (await get(t, key, `/${entry.id}`)).json.data
  t.match(base, { title: 'Hello', locale: 'en', labels: ['neu'], version: '1.1.0', published_at: res.json.data.published_at })
})

t.test('GET and the list with ?locale return the translation when it exists, matched ignoring case', async (t) => {
  const { key } = await createProject()
  const translated = await create(t, key, { title: 'Hello', body: 'World', status: 'published', published_at: '2025-02-01T00:00:00.000Z' })
  const plain = await create(t, key, { title: 'Plain', status: 'published', published_at: '2025-01-01T00:00:00.000Z' })
  const written = (await patch(t, key, translated.id, { locale: 'zh-hant', title: '你好', body: '世界' })).json.data

  for (const locale of ['zh-Hant', 'ZH-HANT', 'zh-hant']) {
    const one = await get(t, key, `/${translated.id}?locale=${locale}`)
    t.strictSame(one.json.data, written, `GET ?locale=${locale}`)
    const page = await get(t, key, `?locale=${locale}`)
    t.strictSame(page.json.data, [written, plain], `list ?locale=${locale}: the other entry in its base locale`)
  }
  const fallback = await get(t, key, `/${translated.id}?locale=zh-Hans`)
  t.match(fallback.json.data, { title: 'Hello', body: 'World', locale: 'en' }, 'no such translation: the base')
  const noLocale = await get(t, key, '')
  t.match(noLocale.json.data, [{ title: 'Hello', locale: 'en' }, { title: 'Plain' }], 'no locale asked: the base')
})

t.test('parallel PATCHes creating the same translation end with exactly one row', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Hello' })
  const titles = Array.from({ length: 8 }, (_, i) => `Bonjour ${i}`)
  const results = await Promise.all(titles.map((title, i) => patch(t, key, entry.id, { locale: i % 2 ? 'fr' : 'FR', title })))
  t.strictSame(results.map((r) => r.status), titles.map(() => 200))
  const rows = await translationRows(entry.id)
  t.equal(rows.length, 1)
  t.ok(titles.includes(rows[0]!.title))
  t.equal(rows[0]!.locale, 'fr')
})
