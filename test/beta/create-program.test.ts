import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

const URL = '/v1/beta/programs'

t.test('POST /v1/beta/programs creates a draft with every optional field null', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const before = Date.now()
  const res = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Mobile app 2.0' } })
  t.equal(res.status, 201)
  const program = res.json.data
  t.match(program.id, /^bp_[0-9A-Za-z]{21}$/)
  t.equal(res.headers.location, `/v1/beta/programs/${program.id}`)
  t.same(program, {
    id: program.id,
    project_id: projectId,
    name: 'Mobile app 2.0',
    version: null,
    slug: 'mobile-app-2-0',
    summary: null,
    access_url: null,
    access_instructions: null,
    status: 'draft',
    allow_public_signup: false,
    feedback_deadline: null,
    created_at: program.created_at,
  })
  t.ok(Date.parse(program.created_at) >= before - 1000, 'created_at is now')

  const fetched = await call(t, app, { url: res.headers.location as string, key })
  t.same(fetched.json.data, program, 'the Location header points at the stored record')
})

t.test('POST stores every field sent, the name trimmed and the deadline in UTC', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const body = {
    name: '  Desktop beta \n',
    version: '2.1.0-beta.1+build.5',
    summary: 'Try the new editor.',
    access_url: 'https://example.com/download',
    access_instructions: 'Install, then sign in.',
    status: 'active',
    allow_public_signup: true,
    feedback_deadline: '2026-12-01T09:00:00+01:00',
  }
  const res = await call(t, app, { method: 'POST', url: URL, key, body })
  t.equal(res.status, 201)
  t.match(res.json.data, {
    ...body,
    name: 'Desktop beta',
    slug: 'desktop-beta',
    feedback_deadline: '2026-12-01T08:00:00.000Z',
  })
})

t.test('POST accepts null for every nullable field', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, {
    method: 'POST',
    url: URL,
    key,
    body: { name: 'Nulls', version: null, summary: null, access_url: null, access_instructions: null, feedback_deadline: null },
  })
  t.equal(res.status, 201)
  t.match(res.json.data, { version: null, summary: null, access_url: null, access_instructions: null, feedback_deadline: null })
})

t.test('POST may create a program directly in any status', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const status of ['draft', 'active', 'closed']) {
    const res = await call(t, app, { method: 'POST', url: URL, key, body: { name: `In ${status}`, status } })
    t.equal(res.status, 201)
    t.equal(res.json.data.status, status)
  }
})

t.test('the slug follows the contract examples', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const cases: Array<[string, string]> = [
    ['Ça va ? Déjà!', 'ca-va-deja'],
    ['日本語 beta', 'beta'],
    ['🚀🚀', 'program'],
    ['alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo', 'alpha-bravo-charlie-delta-echo-foxtrot-golf-hotel-india'],
  ]
  for (const [name, slug] of cases) {
    const res = await call(t, app, { method: 'POST', url: URL, key, body: { name } })
    t.equal(res.status, 201)
    t.equal(res.json.data.slug, slug, name)
    t.equal(res.json.data.name, name, 'the name itself is kept as sent')
  }
})

t.test('a taken slug gets -2, -3, ... within the project, but not across projects', async (t) => {
  const app = await testApp()
  const a = await createProject()
  const b = await createProject()
  const slugs: string[] = []
  for (const name of ['Launch', 'launch!', 'LAUNCH', 'Launch']) {
    const res = await call(t, app, { method: 'POST', url: URL, key: a.key, body: { name } })
    slugs.push(res.json.data.slug)
  }
  t.same(slugs, ['launch', 'launch-2', 'launch-3', 'launch-4'])
  const other = await call(t, app, { method: 'POST', url: URL, key: b.key, body: { name: 'Launch' } })
  t.equal(other.json.data.slug, 'launch', 'another project has its own slugs')
})

t.test('a name whose slug looks numbered does not confuse the numbering', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const first = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Beta 2' } })
  t.equal(first.json.data.slug, 'beta-2')
  const second = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Beta' } })
  t.equal(second.json.data.slug, 'beta')
  const third = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Beta' } })
  t.equal(third.json.data.slug, 'beta-3', 'beta-2 is taken by "Beta 2"')
})

t.test('the first free number is taken, gaps included; slugs of other names are not numbers', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const create = async (name: string) => (await call(t, app, { method: 'POST', url: URL, key, body: { name } })).json.data as { id: string; slug: string }
  for (const name of ['Beta 1', 'Beta 02', 'Beta testing', 'Beta 3', 'Beta 10']) await create(name)
  t.equal((await create('Beta')).slug, 'beta', 'the base first, when free')
  t.equal((await create('Beta')).slug, 'beta-2', 'numbering starts at 2: beta-1 and beta-02 are the slugs of other names')
  t.equal((await create('Beta')).slug, 'beta-4', 'beta-3 is taken')
  const fifth = await create('Beta')
  t.equal(fifth.slug, 'beta-5')
  for (let n = 6; n <= 9; n++) t.equal((await create('Beta')).slug, `beta-${n}`)
  t.equal((await create('Beta')).slug, 'beta-11', 'beta-10 is taken: numbers compare as numbers, not as text')
  await call(t, app, { method: 'DELETE', url: `${URL}/${fifth.id}`, key })
  t.equal((await create('Beta')).slug, 'beta-5', "a deleted program's number is taken again")
  t.equal((await create('Beta')).slug, 'beta-12')
  t.equal((await create('Beta testing')).slug, 'beta-testing-2', 'another base has numbers of its own')
})

t.test('a deleted program frees its slug', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const first = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Reuse me' } })
  await call(t, app, { method: 'DELETE', url: `${URL}/${first.json.data.id}`, key })
  const again = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Reuse me' } })
  t.equal(again.status, 201)
  t.equal(again.json.data.slug, 'reuse-me')
  t.not(again.json.data.id, first.json.data.id)
})

t.test('20 concurrent creates of one name all succeed with distinct slugs', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const results = await Promise.all(
    Array.from({ length: 20 }, () => call(t, app, { method: 'POST', url: URL, key, body: { name: 'Race' } })),
  )
  t.same(
    results.map((r) => r.status),
    Array(20).fill(201),
  )
  const slugs = results.map((r) => r.json.data.slug).sort()
  const expected = ['race', ...Array.from({ length: 19 }, (_, i) => `race-${i + 2}`)].sort()
  t.same(slugs, expected, 'exactly race, race-2 … race-20')
})

t.test('POST validates the body before anything else', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const invalid: Array<[string, unknown, string]> = [
    ['name missing', {}, '/name'],
    ['name blank', { name: '   ' }, '/name'],
    ['name over 200 after trimming', { name: 'x'.repeat(201) }, '/name'],
    ['name null', { name: null }, '/name'],
    ['version without patch', { name: 'x', version: '1.2' }, '/version'],
    ['version with a v', { name: 'x', version: 'v1.2.3' }, '/version'],
    ['relative access_url', { name: 'x', access_url: '/download' }, '/access_url'],
    ['ftp access_url', { name: 'x', access_url: 'ftp://example.com/x' }, '/access_url'],
    ['summary too long', { name: 'x', summary: 's'.repeat(1001) }, '/summary'],
    ['deadline without a zone', { name: 'x', feedback_deadline: '2026-12-01T09:00:00' }, '/feedback_deadline'],
    ['unknown status', { name: 'x', status: 'Active' }, '/status'],
    ['server-owned slug', { name: 'x', slug: 'mine' }, '/slug'],
    ['server-owned id', { name: 'x', id: 'bp_000000000000000000000' }, '/id'],
    ['unknown field', { name: 'x', titel: 'typo' }, '/titel'],
    ['allow_public_signup as a string', { name: 'x', allow_public_signup: 'true' }, '/allow_public_signup'],
  ]
  for (const [label, body, path] of invalid) {
    const res = await call(t, app, { method: 'POST', url: URL, key, body })
    t.equal(res.status, 400, label)
    t.equal(res.json.code, 'validation_failed', label)
    t.ok(
      res.json.errors.some((e: { path: string }) => e.path.startsWith(path)),
      `${label}: an error at ${path}`,
    )
  }
  const list = await call(t, app, { url: URL, key })
  t.same(list.json.data, [], 'nothing was created')
})

t.test('a name of 200 characters after trimming is accepted', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const res = await call(t, app, { method: 'POST', url: URL, key, body: { name: `  ${'n'.repeat(200)}  ` } })
  t.equal(res.status, 201)
  t.equal(res.json.data.name, 'n'.repeat(200))
  t.equal(res.json.data.slug, 'n'.repeat(60))
})

t.test('a deadline that leaves years 0001..9999 in UTC is a 400, not a 500', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const feedback_deadline of ['0000-06-01T00:00:00Z', '0001-01-01T00:00:00+01:00', '9999-12-31T23:30:00-01:00']) {
    const res = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Edge', feedback_deadline } })
    t.equal(res.status, 400, feedback_deadline)
    t.same(res.json.errors?.[0]?.path, '/feedback_deadline')
  }
  const ok = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Edge', feedback_deadline: '9999-12-31T23:59:59.999Z' } })
  t.equal(ok.status, 201)
  t.equal(ok.json.data.feedback_deadline, '9999-12-31T23:59:59.999Z')
})
