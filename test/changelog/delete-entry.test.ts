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

const del = async (t: T, key: string | undefined, path: string) => call(t, await testApp(), { method: 'DELETE', url: `/v1/changelog/${path}`, key })
const get = async (t: T, key: string, path: string) => call(t, await testApp(), { url: `/v1/changelog/${path}`, key })

async function translationRows(entryId: string) {
  const { db } = await testDatabase()
  return db.select().from(changelog_translations).where(eq(changelog_translations.entry_id, entryId))
}

t.test('204 with an empty body; the entry and its translations are gone', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Out', status: 'published' })
  const fr = await call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${entry.id}`, key, body: { locale: 'fr', title: 'Sorti' } })
  t.equal(fr.status, 200)
  t.equal((await translationRows(entry.id)).length, 1)

  const res = await del(t, key, entry.id)
  t.equal(res.status, 204)
  t.equal(res.raw, '')
  t.equal((await get(t, key, entry.id)).status, 404)
  t.equal((await translationRows(entry.id)).length, 0, 'translations go with the entry')
  t.strictSame((await call(t, await testApp(), { url: '/v1/changelog', key })).json.data, [])
  t.equal((await del(t, key, entry.id)).status, 404, 'a second delete finds nothing')
})

t.test('?locale removes that translation only, matched ignoring case', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Hello', locale: 'en' })
  for (const [locale, title] of [['pt-BR', 'Olá'], ['fr', 'Bonjour']]) {
    const res = await call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${entry.id}`, key, body: { locale, title } })
    t.equal(res.status, 200)
  }
  // Writing a translation is a write to the entry: its updated_at moved.
  const base = (await get(t, key, entry.id)).json.data
  t.match(base, { title: 'Hello', locale: 'en' })
  const res = await del(t, key, `${entry.id}?locale=PT-br`)
  t.equal(res.status, 204)
  t.equal(res.raw, '')
  t.strictSame((await get(t, key, `${entry.id}?locale=pt-BR`)).json.data, base, 'pt-BR falls back to the base')
  t.equal((await get(t, key, `${entry.id}?locale=fr`)).json.data.title, 'Bonjour', 'fr is still there')
  t.strictSame((await get(t, key, entry.id)).json.data, base, 'the entry is still there')

  const again = await del(t, key, `${entry.id}?locale=pt-BR`)
  t.equal(again.status, 404, 'no translation left in that locale')
  t.equal(again.json.code, 'not_found')
  t.equal((await del(t, key, `${entry.id}?locale=en`)).status, 404, 'the base locale is no translation')
  t.equal((await del(t, key, `${entry.id}?locale=english`)).status, 400, 'a locale that is not BCP 47')
})

t.test('an id of the wrong shape or of another project is 404, and the entry stays', async (t) => {
  const mine = await createProject()
  const theirs = await createProject()
  const other = await create(t, theirs.key, { title: 'Theirs' })
  await call(t, await testApp(), { method: 'PATCH', url: `/v1/changelog/${other.id}`, key: theirs.key, body: { locale: 'fr', title: 'Leur' } })
  for (const path of [other.id, `${other.id}?locale=fr`, 'bp_' + other.id.slice(3), 'ch_short']) {
    const res = await del(t, mine.key, path)
    t.equal(res.status, 404, path)
    t.equal(res.json.code, 'not_found', path)
  }
  t.equal((await get(t, theirs.key, other.id)).status, 200)
  t.equal((await translationRows(other.id)).length, 1)
})

t.test('writes need the Pro plan; a key is required', async (t) => {
  const pro = await createProject()
  const entry = await create(t, pro.key, { title: 'X' })
  const free = await createProject({ plan: 'free' })
  const res = await del(t, free.key, entry.id)
  t.equal(res.status, 403)
  t.equal(res.json.code, 'plan_required')
  t.equal((await del(t, undefined, entry.id)).status, 401)
  t.equal((await get(t, pro.key, entry.id)).status, 200)
})
