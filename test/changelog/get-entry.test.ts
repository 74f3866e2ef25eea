import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

type T = Parameters<typeof call>[0]

async function create(t: T, key: string, body: object) {
  const res = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body })
  t.equal(res.status, 201)
  return res.json.data
}

const get = async (t: T, key: string | undefined, path: string) => call(t, await testApp(), { url: `/v1/changelog/${path}`, key })

t.test('any entry of the project: drafts and scheduled entries included', async (t) => {
  const { key } = await createProject()
  const draft = await create(t, key, { title: 'Draft' })
  const scheduled = await create(t, key, { title: 'Later', status: 'scheduled', published_at: new Date(Date.now() + 3_600_000).toISOString() })
  const published = await create(t, key, { title: 'Out', status: 'published' })
  for (const entry of [draft, scheduled, published]) {
    const res = await get(t, key, entry.id)
    t.equal(res.status, 200, entry.title)
    t.strictSame(res.json.data, entry, entry.title)
  }
})

t.test('an id of the wrong shape or prefix, an unknown id and an id of another project are 404', async (t) => {
  const mine = await createProject()
  const theirs = await createProject()
  const other = await create(t, theirs.key, { title: 'Theirs', status: 'published' })
  for (const id of ['nope', 'bp_' + other.id.slice(3), other.id + 'x', 'ch_000000000000000000000', other.id, encodeURIComponent("ch_' or 1=1 --")]) {
    const res = await get(t, mine.key, id)
    t.equal(res.status, 404, id)
    t.equal(res.json.code, 'not_found', id)
  }
  t.equal((await get(t, theirs.key, other.id)).status, 200, 'its own project sees it')
})

t.test('?locale with no translation returns the base content and base locale', async (t) => {
  const { key } = await createProject()
  const entry = await create(t, key, { title: 'Hello', locale: 'en-GB' })
  const res = await get(t, key, `${entry.id}?locale=fr`)
  t.strictSame(res.json.data, entry)
  const base = await get(t, key, `${entry.id}?locale=EN-gb`)
  t.strictSame(base.json.data, entry, 'the base locale, in any case')
})

t.test('reads work on the free plan; a key is required', async (t) => {
  const pro = await createProject()
  const entry = await create(t, pro.key, { title: 'X' })
  const free = await createProject({ plan: 'free' })
  t.equal((await get(t, free.key, entry.id)).status, 404, 'the free project reads (and finds nothing of another project)')
  t.equal((await get(t, undefined, entry.id)).status, 401)
})
