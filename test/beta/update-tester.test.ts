// PATCH …/testers/{id}: the API's part of the tester status machine (revoke and restore).
import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { beta_testers } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

type Status = 'invited' | 'joined' | 'declined' | 'revoked'

async function programWithTester(t: Test, app: FastifyInstance, key: string) {
  const program = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Roster', status: 'active' } })).json.data
  const tester = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.id}/testers`, key, body: { email: 'tester@example.com' } })).json.data
  return { programId: program.id as string, tester, url: `/v1/beta/programs/${program.id}/testers/${tester.id}` }
}

/** Puts a tester in a status the portal would give it, as the portal's accept would. */
async function setStatus(testerId: string, status: Status) {
  const { db } = await testDatabase()
  const joined = status === 'joined'
  await db
    .update(beta_testers)
    .set({ status, joined_at: joined ? new Date() : null, end_user_id: joined ? newId('eu') : null })
    .where(eq(beta_testers.id, testerId))
}

t.test('revoking an invited tester answers the revoked record and stores it', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { tester, url } = await programWithTester(t, app, key)
  const res = await call(t, app, { method: 'PATCH', url, key, body: { status: 'revoked' } })
  t.equal(res.status, 200)
  t.same(res.json.data, { ...tester, status: 'revoked' }, 'only the status changes; the token stays')
  t.ok(res.headers.etag, 'an ETag like every PATCH answer')
  const fetched = await call(t, app, { url, key })
  t.same(fetched.json.data, res.json.data)
})

t.test('the API moves exactly: invited, joined, declined → revoked; revoked → invited; same → no-op', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const ALL: Status[] = ['invited', 'joined', 'declined', 'revoked']
  const allowed = new Set(['invited→revoked', 'joined→revoked', 'declined→revoked', 'revoked→invited', 'invited→invited', 'revoked→revoked'])
  for (const from of ALL) {
    for (const to of ['revoked', 'invited'] as const) {
      const { tester, url } = await programWithTester(t, app, key)
      await setStatus(tester.id, from)
      const before = (await call(t, app, { url, key })).json.data
      const res = await call(t, app, { method: 'PATCH', url, key, body: { status: to } })
      const after = (await call(t, app, { url, key })).json.data
      if (allowed.has(`${from}→${to}`)) {
        t.equal(res.status, 200, `${from} → ${to} is allowed`)
        t.equal(res.json.data.status, to)
        t.same(after, res.json.data, 'and stored')
      } else {
        t.equal(res.status, 409, `${from} → ${to} is refused`)
        t.equal(res.json.code, 'invalid_transition')
        t.equal(res.json.detail, `A ${from} tester cannot become ${to}: through the API it can only become revoked (only a revoked tester can be restored to invited).`)
        t.same(after, before, 'nothing changed')
      }
    }
  }
})

t.test('revoking a joined tester keeps its join; restoring clears it so the tester accepts anew', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { tester, url } = await programWithTester(t, app, key)
  await setStatus(tester.id, 'joined')
  const joined = (await call(t, app, { url, key })).json.data
  t.ok(joined.joined_at && joined.end_user_id)
  const revoked = await call(t, app, { method: 'PATCH', url, key, body: { status: 'revoked' } })
  t.same(revoked.json.data, { ...joined, status: 'revoked' }, 'joined_at and end_user_id stay on record')
  const restored = await call(t, app, { method: 'PATCH', url, key, body: { status: 'invited' } })
  t.equal(restored.status, 200)
  t.same(restored.json.data, { ...tester, status: 'invited', joined_at: null, end_user_id: null }, 'back to a fresh invitation with the same token')
})

t.test('an empty body is a 200 no-op returning the tester', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { tester, url } = await programWithTester(t, app, key)
  const res = await call(t, app, { method: 'PATCH', url, key, body: {} })
  t.equal(res.status, 200)
  t.same(res.json.data, tester)
})

t.test('statuses the tester sets itself, unknown fields and server-owned fields are 400', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { tester, url } = await programWithTester(t, app, key)
  for (const body of [{ status: 'joined' }, { status: 'declined' }, { status: 'Revoked' }, { status: null }, { token: 'x' }, { email: 'a@b.co' }, { status: 'revoked', extra: 1 }]) {
    const res = await call(t, app, { method: 'PATCH', url, key, body })
    t.equal(res.status, 400, JSON.stringify(body))
    t.equal(res.json.code, 'validation_failed')
  }
  t.same((await call(t, app, { url, key })).json.data, tester, 'nothing changed')
})

t.test('unknown, malformed, foreign and mismatched ids are 404', async (t) => {
  const app = await testApp()
  const owner = await createProject()
  const other = await createProject()
  const a = await programWithTester(t, app, owner.key)
  const b = await programWithTester(t, app, owner.key)
  const urls = [
    `/v1/beta/programs/${a.programId}/testers/bt_AAAAAAAAAAAAAAAAAAAAA`,
    `/v1/beta/programs/${a.programId}/testers/not-an-id`,
    `/v1/beta/programs/${a.programId}/testers/${a.programId}`,
    `/v1/beta/programs/${b.programId}/testers/${a.tester.id}`,
    `/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA/testers/${a.tester.id}`,
  ]
  for (const url of urls) {
    const res = await call(t, app, { method: 'PATCH', url, key: owner.key, body: { status: 'revoked' } })
    t.equal(res.status, 404, url)
    t.equal(res.json.code, 'not_found')
  }
  const foreign = await call(t, app, { method: 'PATCH', url: a.url, key: other.key, body: { status: 'revoked' } })
  t.equal(foreign.status, 404, "another project's tester")
  t.equal((await call(t, app, { url: a.url, key: owner.key })).json.data.status, 'invited', 'and it is untouched')
})

t.test('If-Match: a stale tag is 412 and changes nothing; the current tag passes', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { url } = await programWithTester(t, app, key)
  const read = await call(t, app, { url, key })
  const etag = String(read.headers.etag)
  await setStatus(read.json.data.id, 'joined')
  const stale = await call(t, app, { method: 'PATCH', url, key, body: { status: 'revoked' }, headers: { 'if-match': etag } })
  t.equal(stale.status, 412)
  t.equal(stale.json.code, 'precondition_failed')
  t.equal((await call(t, app, { url, key })).json.data.status, 'joined')
  const current = String((await call(t, app, { url, key })).headers.etag)
  const ok = await call(t, app, { method: 'PATCH', url, key, body: { status: 'revoked' }, headers: { 'if-match': current } })
  t.equal(ok.status, 200)
  t.equal(ok.json.data.status, 'revoked')
})

t.test('a non-JSON body is 415', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { url } = await programWithTester(t, app, key)
  const res = await call(t, app, { method: 'PATCH', url, key, body: 'status=revoked', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(res.status, 415)
  t.equal(res.json.code, 'unsupported_media_type')
})
