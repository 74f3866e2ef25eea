import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

const post = (t: Parameters<typeof call>[0], key: string | undefined, body: unknown) =>
  testApp().then((app) => call(t, app, { method: 'POST', url: '/v1/changelog', key, body }))

t.test('201 with the documented defaults and a Location header; a draft says so in status', async (t) => {
  const { key } = await createProject()
  const res = await post(t, key, { title: 'Dark mode' })
  t.equal(res.status, 201)
  const entry = res.json.data
  t.match(entry.id, /^ch_[0-9A-Za-z]{21}$/)
  t.equal(res.headers.location, `/v1/changelog/${entry.id}`)
  t.strictSame(Object.keys(entry).sort(), ['body', 'created_at', 'id', 'labels', 'locale', 'published_at', 'status', 'title', 'updated_at', 'version'])
  t.match(entry, { title: 'Dark mode', body: '', labels: [], version: '1.0.0', locale: 'en', published_at: null, status: 'draft' })
  t.equal(entry.created_at, entry.updated_at)

  const got = await call(t, await testApp(), { url: res.headers.location as string, key })
  t.strictSame(got.json.data, entry, 'the Location serves the created entry')
})

t.test('every field sent is stored', async (t) => {
  const { key } = await createProject()
  const body = { title: 'Exports', body: '# CSV\nNow **faster**.', labels: ['export'], version: '2.1.0-beta.1+build.5', locale: 'de', status: 'draft' }
  const res = await post(t, key, body)
  t.equal(res.status, 201)
  t.match(res.json.data, { title: 'Exports', body: '# CSV\nNow **faster**.', labels: ['export'], version: '2.1.0-beta.1+build.5', locale: 'de', published_at: null })
})

t.test('labels are stored trimmed, lowercased and de-duplicated in first-seen order', async (t) => {
  const { key } = await createProject()
  const res = await post(t, key, { title: 'L', labels: ['New', 'new ', ' UI', 'Fix', 'ui'] })
  t.strictSame(res.json.data.labels, ['new', 'ui', 'fix'])
})

t.test('labels come back as written, whatever characters array syntax uses: backslashes, quotes, braces, commas, NULL', async (t) => {
  // On PostgreSQL the driver handed text[] over as its text form, and Drizzle's parser dropped
  // every backslash: `C:\temp` read back as `c:temp`, and `\` as `` (found by a review
  // comparing the two databases). The contract changes a label by trimming and lowercasing only.
  const { key } = await createProject()
  const labels = ['C:\\temp', '\\', '"quoted"', '{brace}', 'a,b', 'null', 'NULL x', 'two  spaces', 'tab\there', 'ünï😀']
  const created = await post(t, key, { title: 'L', labels, status: 'published' })
  const expected = labels.map((label) => label.toLowerCase())
  t.strictSame(created.json.data.labels, expected, 'as the write answers')
  const app = await testApp()
  t.strictSame((await call(t, app, { url: `/v1/changelog/${created.json.data.id}`, key })).json.data.labels, expected, 'as a read answers')
  const page = await call(t, app, { url: `/v1/changelog?label=${encodeURIComponent('C:\\temp')}`, key })
  t.strictSame(page.json.data.map((entry: { labels: string[] }) => entry.labels), [expected], 'as a list filtered on one of them answers')
})

t.test('a label that lowercasing or NFC makes longer than 32 characters is 400', async (t) => {
  const { key } = await createProject()
  // U+0958 is unchanged by lowercasing; NFC decomposes it into two characters.
  for (const label of ['İ'.repeat(20), '\u0958'.repeat(32)]) {
    const res = await post(t, key, { title: 'L', labels: ['ok', label] })
    t.equal(res.status, 400)
    t.strictSame(res.json.errors, [{ in: 'body', path: '/labels/1', message: 'must have at most 32 characters once lowercased and in NFC' }])
  }
})

t.test('the locale is stored in canonical case, without alias replacement', async (t) => {
  const { key } = await createProject()
  const cases: [string, string][] = [['pt-br', 'pt-BR'], ['ZH-HANT', 'zh-Hant'], ['es-419', 'es-419'], ['iw', 'iw']]
  for (const [sent, stored] of cases) {
    const res = await post(t, key, { title: 'L', locale: sent })
    t.equal(res.json.data.locale, stored, sent)
  }
})

t.test('publishing on create', async (t) => {
  const { key } = await createProject()
  const before = Date.now()

  const published = await post(t, key, { title: 'Now', status: 'published' })
  t.equal(published.status, 201)
  const at = Date.parse(published.json.data.published_at)
  t.ok(at >= before - 1000 && at <= Date.now() + 1000, 'published now')

  const backdated = await post(t, key, { title: 'Imported', status: 'published', published_at: '2020-03-01T10:00:00+02:00' })
  t.equal(backdated.json.data.published_at, '2020-03-01T08:00:00.000Z', 'back-dated, returned in UTC')

  const future = new Date(Date.now() + 86_400_000).toISOString()
  const scheduled = await post(t, key, { title: 'Later', status: 'scheduled', published_at: future })
  t.equal(scheduled.json.data.published_at, future)

  const draft = await post(t, key, { title: 'Draft', status: 'draft' })
  t.equal(draft.json.data.published_at, null)

  const ahead = await post(t, key, { title: 'Ahead', status: 'published', published_at: future })
  t.equal(ahead.json.data.published_at, future, 'published with a future date is in effect scheduled')
  const list = await call(t, await testApp(), { url: '/v1/changelog', key })
  t.strictSame(list.json.data.map((e: { title: string }) => e.title), ['Now', 'Imported'], 'drafts and future dates are not listed')
})

t.test('publishing rules refuse contradictory bodies with a 400', async (t) => {
  const { key } = await createProject()
  const past = '2020-01-01T00:00:00.000Z'
  const future = new Date(Date.now() + 86_400_000).toISOString()
  const cases: [string, object, string][] = [
    ['scheduled in the past', { status: 'scheduled', published_at: past }, 'must be in the future with status scheduled'],
    ['scheduled without a date', { status: 'scheduled' }, 'is required with status scheduled'],
    ['draft with a date', { status: 'draft', published_at: future }, 'must not be sent with status draft'],
  ]
  for (const [name, body, message] of cases) {
    const res = await post(t, key, { title: 'X', ...body })
    t.equal(res.status, 400, name)
    t.equal(res.json.code, 'validation_failed', name)
    t.strictSame(res.json.errors, [{ in: 'body', path: '/published_at', message }], name)
  }
  const noStatus = await post(t, key, { title: 'X', published_at: past })
  t.equal(noStatus.status, 400, 'published_at without status')
  t.equal(noStatus.json.detail, 'body/status is required when published_at is sent')

  const list = await call(t, await testApp(), { url: '/v1/changelog', key })
  t.strictSame(list.json.data, [], 'nothing was created')
})

t.test('the schema refuses what it describes', async (t) => {
  const { key } = await createProject()
  const cases: [string, object][] = [
    ['no title', {}],
    ['a blank title', { title: '   ' }],
    ['a title of 201 characters', { title: 'x'.repeat(201) }],
    ['a version that is not SemVer', { title: 'X', version: 'v1.2' }],
    ['a locale that is not BCP 47', { title: 'X', locale: 'english' }],
    ['eleven labels', { title: 'X', labels: 'abcdefghijk'.split('') }],
    ['an empty label', { title: 'X', labels: ['  '] }],
    ['a timestamp without a zone', { title: 'X', status: 'published', published_at: '2020-01-01T00:00:00' }],
    ['an unknown field', { title: 'X', color: 'red' }],
    ['a server-owned field', { title: 'X', id: 'ch_000000000000000000000' }],
    ['an unknown status', { title: 'X', status: 'Published' }],
  ]
  for (const [name, body] of cases) {
    const res = await post(t, key, body)
    t.equal(res.status, 400, name)
  }
})

t.test('writes need the Pro plan, not the beta feature; a key is required', async (t) => {
  const free = await createProject({ plan: 'free' })
  const refused = await post(t, free.key, { title: 'X' })
  t.equal(refused.status, 403)
  t.equal(refused.json.code, 'plan_required')

  const noKey = await post(t, undefined, { title: 'X' })
  t.equal(noKey.status, 401)

  const noBeta = await createProject({ plan: 'pro', beta: false })
  const res = await post(t, noBeta.key, { title: 'X' })
  t.equal(res.status, 201)
})
