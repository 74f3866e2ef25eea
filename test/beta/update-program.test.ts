import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

const URL = '/v1/beta/programs'

async function createProgram(t: Test, app: FastifyInstance, key: string, body: Record<string, unknown> = {}) {
  const res = await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Original', ...body } })
  t.equal(res.status, 201)
  return res.json.data
}

const FULL = {
  version: '1.0.0',
  summary: 'Summary',
  access_url: 'https://example.com/a',
  access_instructions: 'Steps',
  allow_public_signup: true,
  feedback_deadline: '2026-12-01T00:00:00.000Z',
}

t.test('PATCH changes only the fields sent', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key, FULL)
  const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: { summary: 'New summary' } })
  t.equal(res.status, 200)
  t.same(res.json.data, { ...program, summary: 'New summary' })
  const fetched = await call(t, app, { url: `${URL}/${program.id}`, key })
  t.same(fetched.json.data, res.json.data, 'the change is stored')
})

t.test('PATCH sets every writable field at once', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key)
  const body = {
    name: ' Renamed ',
    version: '3.0.0-rc.1',
    summary: 'S',
    access_url: 'http://example.com/b',
    access_instructions: 'I',
    status: 'active',
    allow_public_signup: true,
    feedback_deadline: '2027-01-01T10:00:00-02:00',
  }
  const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body })
  t.equal(res.status, 200)
  t.same(res.json.data, { ...program, ...body, name: 'Renamed', feedback_deadline: '2027-01-01T12:00:00.000Z' })
})

t.test('null clears each nullable field', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key, FULL)
  const cleared = { version: null, summary: null, access_url: null, access_instructions: null, feedback_deadline: null }
  const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: cleared })
  t.equal(res.status, 200)
  t.same(res.json.data, { ...program, ...cleared })
})

t.test('null for name, status or allow_public_signup is a 400 and changes nothing', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key)
  for (const field of ['name', 'status', 'allow_public_signup']) {
    const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: { [field]: null, summary: 'changed' } })
    t.equal(res.status, 400, field)
    t.equal(res.json.code, 'validation_failed')
    t.ok(res.json.errors.some((e: { path: string }) => e.path === `/${field}`), `an error at /${field}`)
  }
  const fetched = await call(t, app, { url: `${URL}/${program.id}`, key })
  t.same(fetched.json.data, program)
})

t.test('an empty body is a 200 no-op returning the record', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key, FULL)
  const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: {} })
  t.equal(res.status, 200)
  t.same(res.json.data, program)
})

t.test('renaming keeps the slug, and the old name does not block a new program', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key, { name: 'First name' })
  const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: { name: 'Second name' } })
  t.equal(res.json.data.name, 'Second name')
  t.equal(res.json.data.slug, 'first-name')
  const another = await createProgram(t, app, key, { name: 'Second name' })
  t.equal(another.slug, 'second-name')
  const clash = await createProgram(t, app, key, { name: 'First name' })
  t.equal(clash.slug, 'first-name-2', 'the renamed program still holds its slug')
})

t.test('the status machine allows exactly draft→active, draft→closed, active→closed, closed→active and no-ops', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const statuses = ['draft', 'active', 'closed'] as const
  const allowed = new Set(['draft→active', 'draft→closed', 'active→closed', 'closed→active'])
  for (const from of statuses) {
    for (const to of statuses) {
      const program = await createProgram(t, app, key, { status: from })
      const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: { status: to, summary: 'touched' } })
      const stored = (await call(t, app, { url: `${URL}/${program.id}`, key })).json.data
      if (from === to || allowed.has(`${from}→${to}`)) {
        t.equal(res.status, 200, `${from} → ${to} is allowed`)
        t.same(res.json.data, { ...program, status: to, summary: 'touched' })
        t.same(stored, res.json.data)
      } else {
        t.equal(res.status, 409, `${from} → ${to} is refused`)
        t.equal(res.json.code, 'invalid_transition')
        const refusals: Record<string, string> = {
          'active→draft': 'An active program cannot become draft: it can only become closed.',
          'closed→draft': 'A closed program cannot become draft: it can only become active.',
        }
        t.equal(res.json.detail, refusals[`${from}→${to}`])
        t.same(stored, program, 'a refused change leaves every field alone, not just status')
      }
    }
  }
})

t.test('a program can be reopened and closed again', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key)
  const steps = ['active', 'closed', 'active', 'closed']
  for (const status of steps) {
    const res = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: { status } })
    t.equal(res.status, 200, `→ ${status}`)
    t.equal(res.json.data.status, status)
  }
})

t.test('a status change racing a refused one never lands the program in a forbidden state', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  // draft → draft is a no-op and closed → draft is refused, so once the close lands no write may
  // bring draft back: a check-then-write would, when its check ran before the close.
  for (let round = 0; round < 10; round++) {
    const program = await createProgram(t, app, key)
    const patch = (status: string) => call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: { status } })
    const [close, ...stays] = await Promise.all([patch('closed'), patch('draft'), patch('draft'), patch('draft')])
    t.equal(close!.status, 200)
    t.ok(stays.every((r) => r.status === 200 || (r.status === 409 && r.json.code === 'invalid_transition')))
    const stored = await call(t, app, { url: `${URL}/${program.id}`, key })
    t.equal(stored.json.data.status, 'closed', `round ${round}`)
  }
})

t.test('unknown, foreign and malformed ids are 404', async (t) => {
  const app = await testApp()
  const owner = await createProject()
  const other = await createProject()
  const program = await createProgram(t, app, owner.key)
  for (const id of ['bp_AAAAAAAAAAAAAAAAAAAAA', program.id, 'bt_AAAAAAAAAAAAAAAAAAAAA', 'x']) {
    const res = await call(t, app, { method: 'PATCH', url: `${URL}/${id}`, key: other.key, body: { name: 'Hijack' } })
    t.equal(res.status, 404, id)
    t.equal(res.json.code, 'not_found')
  }
  const empty = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key: other.key, body: {} })
  t.equal(empty.status, 404, 'an empty PATCH of a foreign program is a 404 too')
  const invalidStatus = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key: other.key, body: { status: 'draft' } })
  t.equal(invalidStatus.status, 404, 'a foreign program is 404, never 409')
  const stored = await call(t, app, { url: `${URL}/${program.id}`, key: owner.key })
  t.equal(stored.json.data.name, 'Original')
})

t.test('validation comes before 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const body of [{ name: '' }, { slug: 'x' }, { version: '1' }, { created_at: '2026-01-01T00:00:00Z' }]) {
    const res = await call(t, app, { method: 'PATCH', url: `${URL}/bp_AAAAAAAAAAAAAAAAAAAAA`, key, body })
    t.equal(res.status, 400, JSON.stringify(body))
  }
  const malformed = await call(t, app, { method: 'PATCH', url: `${URL}/nope`, key, body: { status: 'open' } })
  t.equal(malformed.status, 400, 'even for an id of the wrong shape')
})

t.test('a body that is not a JSON object is a 4xx', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await createProgram(t, app, key)
  const notJson = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: '{"name": ' })
  t.equal(notJson.status, 400)
  const array = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: [] })
  t.equal(array.status, 400)
  const text = await call(t, app, { method: 'PATCH', url: `${URL}/${program.id}`, key, body: 'name=x', headers: { 'content-type': 'text/plain' } })
  t.equal(text.status, 415)
})
