import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { beta_testers } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

async function createProgram(t: Test, app: FastifyInstance, key: string, status = 'active') {
  const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Roster', status } })
  return res.json.data.id as string
}

const testersUrl = (programId: string) => `/v1/beta/programs/${programId}/testers`

t.test('POST …/testers enrolls a new tester: 201, Location and the documented defaults', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const programId = await createProgram(t, app, key)
  const before = Date.now()
  const res = await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email: '  Ada.Lovelace@Example.COM ' } })
  t.equal(res.status, 201)
  const tester = res.json.data
  t.match(tester.id, /^bt_[0-9A-Za-z]{21}$/)
  t.equal(res.headers.location, `/v1/beta/programs/${programId}/testers/${tester.id}`)
  t.same(tester, {
    id: tester.id,
    beta_program_id: programId,
    email: 'ada.lovelace@example.com',
    token: tester.token,
    source: 'invite',
    status: 'invited',
    end_user_id: null,
    invited_at: tester.invited_at,
    joined_at: null,
    join_url: null,
  })
  t.match(tester.token, /^[A-Za-z0-9_-]{32}$/)
  t.ok(Date.parse(tester.invited_at) >= before - 1000, 'invited_at is now')
  const fetched = await call(t, app, { url: res.headers.location as string, key })
  t.same(fetched.json.data, tester, 'Location points at the stored tester')
})

t.test('enrolling the same email again is a 200 with the record unchanged', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const programId = await createProgram(t, app, key)
  const first = await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email: 'grace@example.com' } })
  t.equal(first.status, 201)
  for (const email of ['grace@example.com', 'GRACE@example.com', '\tGrace@Example.com\n']) {
    const again = await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email } })
    t.equal(again.status, 200, JSON.stringify(email))
    t.same(again.json.data, first.json.data, 'same id, same token, same invited_at')
    t.notOk(again.headers.location, 'no Location for an existing tester')
  }
})

t.test('an existing tester is returned unchanged whatever its status, revoked included', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { db } = await testDatabase()
  const programId = await createProgram(t, app, key)
  const first = (await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email: 'r@example.com' } })).json.data
  const joinedAt = new Date('2026-02-03T04:05:06.789Z')
  const endUserId = newId('eu')
  await db.update(beta_testers).set({ status: 'revoked', joined_at: joinedAt, end_user_id: endUserId }).where(eq(beta_testers.id, first.id))
  const again = await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email: 'r@example.com' } })
  t.equal(again.status, 200)
  t.same(again.json.data, { ...first, status: 'revoked', joined_at: joinedAt.toISOString(), end_user_id: endUserId })
})

t.test('50 concurrent enrollments of one email make exactly one tester', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const programId = await createProgram(t, app, key)
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email: i % 2 ? 'Race@Example.com' : 'race@example.com' } }),
    ),
  )
  const statuses = results.map((r) => r.status)
  t.equal(statuses.filter((s) => s === 201).length, 1, 'one 201')
  t.equal(statuses.filter((s) => s === 200).length, 49, '49 × 200')
  t.same(new Set(results.map((r) => r.json.data.id)).size, 1, 'all the same tester')
  t.same(new Set(results.map((r) => r.json.data.token)).size, 1, 'all the same token')
  const list = await call(t, app, { url: testersUrl(programId), key })
  t.equal(list.json.data.length, 1)
})

t.test('the same email on two programs is two testers with distinct tokens', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const a = await createProgram(t, app, key)
  const b = await createProgram(t, app, key)
  const ra = await call(t, app, { method: 'POST', url: testersUrl(a), key, body: { email: 'both@example.com' } })
  const rb = await call(t, app, { method: 'POST', url: testersUrl(b), key, body: { email: 'both@example.com' } })
  t.equal(ra.status, 201)
  t.equal(rb.status, 201)
  t.not(ra.json.data.id, rb.json.data.id)
  t.not(ra.json.data.token, rb.json.data.token)
})

t.test('draft and active programs accept testers; a closed one is 409 program_closed', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const status of ['draft', 'active']) {
    const programId = await createProgram(t, app, key, status)
    const res = await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email: 'x@example.com' } })
    t.equal(res.status, 201, status)
  }
  const closed = await createProgram(t, app, key, 'active')
  const enrolled = await call(t, app, { method: 'POST', url: testersUrl(closed), key, body: { email: 'early@example.com' } })
  await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${closed}`, key, body: { status: 'closed' } })
  for (const email of ['new@example.com', 'early@example.com']) {
    const res = await call(t, app, { method: 'POST', url: testersUrl(closed), key, body: { email } })
    t.equal(res.status, 409, email)
    t.equal(res.json.code, 'program_closed')
  }
  const list = await call(t, app, { url: testersUrl(closed), key })
  t.same(
    list.json.data.map((x: { id: string }) => x.id),
    [enrolled.json.data.id],
    'nobody was added',
  )
  await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${closed}`, key, body: { status: 'active' } })
  const reopened = await call(t, app, { method: 'POST', url: testersUrl(closed), key, body: { email: 'new@example.com' } })
  t.equal(reopened.status, 201, 'a reopened program accepts testers again')
})

t.test('an unknown, foreign or malformed program id is 404', async (t) => {
  const app = await testApp()
  const owner = await createProject()
  const other = await createProject()
  const programId = await createProgram(t, app, owner.key)
  for (const id of [programId, 'bp_AAAAAAAAAAAAAAAAAAAAA', 'bt_AAAAAAAAAAAAAAAAAAAAA', 'nope']) {
    const res = await call(t, app, { method: 'POST', url: testersUrl(id), key: other.key, body: { email: 'x@example.com' } })
    t.equal(res.status, 404, id)
    t.equal(res.json.code, 'not_found')
  }
  const list = await call(t, app, { url: testersUrl(programId), key: owner.key })
  t.same(list.json.data, [], 'nothing was enrolled on the foreign program')
})

t.test('invalid emails and bodies are 400, before 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const programId = await createProgram(t, app, key)
  const local = 'a'.repeat(64)
  const invalid: unknown[] = [
    {},
    { email: '' },
    { email: '   ' },
    { email: 'no-at-sign.example.com' },
    { email: 'two@@example.com' },
    { email: 'a@b@example.com' },
    { email: 'nodot@example' },
    { email: 'trailing@example.' },
    { email: 'sp ace@example.com' },
    { email: `${local}@${'d'.repeat(190)}.com` }, // 64 + 1 + 194 = 259 characters
    { email: null },
    { email: 42 },
    { email: 'ok@example.com', token: 'mine' },
    { email: 'ok@example.com', status: 'joined' },
  ]
  for (const body of invalid) {
    for (const pid of [programId, 'bp_AAAAAAAAAAAAAAAAAAAAA']) {
      const res = await call(t, app, { method: 'POST', url: testersUrl(pid), key, body })
      t.equal(res.status, 400, `${JSON.stringify(body).slice(0, 60)} on ${pid === programId ? 'a real' : 'an unknown'} program`)
      t.equal(res.json.code, 'validation_failed')
    }
  }
  const longest = `${local}@${'d'.repeat(185)}.com` // 254 characters
  t.equal(longest.length, 254)
  const ok = await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email: `  ${longest.toUpperCase()}  ` } })
  t.equal(ok.status, 201, '254 characters after trimming is accepted')
  t.equal(ok.json.data.email, longest)
})

t.test('an email that lowercasing or NFC lengthens past 254 characters is a 400, not a 500', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const programId = await createProgram(t, app, key)
  // 'İ' lowercases to 'i' plus a combining dot, and NFC decomposes U+0958 into two characters:
  // two characters where the schema counted one.
  for (const email of [`${'İ'.repeat(60)}@${'d'.repeat(189)}.com`, `${'\u0958'.repeat(100)}@${'b'.repeat(149)}.com`]) {
    t.equal([...email].length, 254)
    const res = await call(t, app, { method: 'POST', url: testersUrl(programId), key, body: { email } })
    t.equal(res.status, 400)
    t.strictSame(res.json.errors, [{ in: 'body', path: '/email', message: 'must be at most 254 characters once trimmed, lowercased and in NFC' }])
  }
})
