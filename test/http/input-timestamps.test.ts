// Input timestamps name years 1000 to 9999, in UTC too (contract §11): outside, a 400 that
// names the field, on every date-time input, never a 500 or a date the API cannot print back.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

const OUTSIDE = [
  '0999-12-31T23:59:59.999Z',
  '0000-01-01T00:00:00Z',
  '1000-01-01T00:30:00+01:00', // 0999 in UTC
  '9999-12-31T23:30:00-01:00', // 10000 in UTC
  '+010000-01-01T00:00:00Z',
  '10000-01-01T00:00:00Z',
]

t.test('every date-time input refuses a year outside 1000..9999, naming the field', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Dates' } })).json.data.id as string
  const entry = (await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Dates', status: 'published' } })).json.data.id as string
  const inputs = [
    { method: 'POST' as const, url: '/v1/beta/programs', field: 'feedback_deadline', body: (v: string) => ({ name: 'Edge', feedback_deadline: v }) },
    { method: 'PATCH' as const, url: `/v1/beta/programs/${program}`, field: 'feedback_deadline', body: (v: string) => ({ feedback_deadline: v }) },
    { method: 'POST' as const, url: '/v1/changelog', field: 'published_at', body: (v: string) => ({ title: 'Edge', status: 'published', published_at: v }) },
    { method: 'PATCH' as const, url: `/v1/changelog/${entry}`, field: 'published_at', body: (v: string) => ({ published_at: v }) },
  ]
  for (const input of inputs) {
    for (const value of OUTSIDE) {
      const res = await call(t, app, { method: input.method, url: input.url, key, body: input.body(value) })
      t.equal(res.status, 400, `${input.method} ${input.field} ${value}`)
      t.equal(res.json.code, 'validation_failed')
      t.equal(res.json.errors?.[0]?.path, `/${input.field}`, 'the field is named')
      // "in UTC": 1000-01-01T00:30:00+01:00 is a year 1000 as written (found by a review).
      t.match(res.json.detail, new RegExp(`^body/${input.field} .*1000 to 9999 in UTC \\(1000-01-01T00:00:00Z to 9999-12-31T23:59:59\\.999Z\\)`), 'the detail says which years, in UTC')
    }
  }
})

t.test('years 1000 and 9999 are accepted and returned as sent', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const feedback_deadline of ['1000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
    const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Edge', feedback_deadline } })
    t.equal(res.status, 201)
    t.equal(res.json.data.feedback_deadline, feedback_deadline)
  }
  const past = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Old', status: 'published', published_at: '1000-01-01T01:00:00+01:00' } })
  t.equal(past.json.data.published_at, '1000-01-01T00:00:00.000Z')
  const future = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Late', status: 'scheduled', published_at: '9999-12-31T23:59:59.999Z' } })
  t.equal(future.json.data.published_at, '9999-12-31T23:59:59.999Z')
})

t.test('times and offsets out of their ranges are refused, never rolled over', async (t) => {
  // 24:00:00 was taken for the next day's midnight (found by an outside review).
  const app = await testApp()
  const { key } = await createProject()
  for (const published_at of ['2026-05-01T24:00:00Z', '2026-05-01T23:60:00Z', '2026-05-01T23:59:60Z', '2026-05-01T12:00:00+24:00', '2026-05-01T12:00:00+01:60']) {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Edge', status: 'published', published_at } })
    t.equal(res.status, 400, published_at)
    t.equal(res.json.errors?.[0]?.path, '/published_at')
  }
  for (const [published_at, stored] of [['2026-05-01T23:59:59.999Z', '2026-05-01T23:59:59.999Z'], ['2026-05-01T00:00:00+23:59', '2026-04-30T00:01:00.000Z']] as const) {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Edge', status: 'published', published_at } })
    t.equal(res.status, 201, published_at)
    t.equal(res.json.data.published_at, stored)
  }
})

t.test('a fraction of a second of any length is accepted and kept to the millisecond, truncated', async (t) => {
  // Ten or more digits were a 400, though RFC 3339 bounds none (found by a contract review).
  const app = await testApp()
  const { key } = await createProject()
  const cases = [
    ['2030-01-01T10:00:00.1239Z', '2030-01-01T10:00:00.123Z'],
    ['2030-01-01T10:00:00.1234567891Z', '2030-01-01T10:00:00.123Z'],
    [`2030-01-01T10:00:00.${'9'.repeat(30)}+01:00`, '2030-01-01T09:00:00.999Z'],
  ] as const
  for (const [feedback_deadline, stored] of cases) {
    const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Fraction', feedback_deadline } })
    t.equal(res.status, 201, feedback_deadline)
    t.equal(res.json.data.feedback_deadline, stored)
  }
  const long = `2030-01-01T10:00:00.${'1'.repeat(60)}Z`
  const refused = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Fraction', feedback_deadline: long } })
  t.equal(refused.status, 400, 'beyond the 64 characters of the schema')
  t.equal(refused.json.errors?.[0]?.path, '/feedback_deadline')
})
