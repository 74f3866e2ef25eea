import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { beta_feedback, beta_testers } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

async function programWithTesters(t: Test, app: FastifyInstance, key: string, emails: string[]) {
  const program = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Roster' } })).json.data
  const testers = []
  for (const email of emails) {
    testers.push((await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.id}/testers`, key, body: { email } })).json.data)
  }
  return { programId: program.id as string, testers }
}

t.test('DELETE …/testers/{id} answers 204 with an empty body and removes the tester and its feedback only', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const { db } = await testDatabase()
  const { programId, testers } = await programWithTesters(t, app, key, ['gone@example.com', 'stays@example.com'])
  const [gone, stays] = testers
  await db.insert(beta_feedback).values([
    { id: newId('fb'), project_id: projectId, beta_program_id: programId, beta_tester_id: gone.id, body: 'one' },
    { id: newId('fb'), project_id: projectId, beta_program_id: programId, beta_tester_id: gone.id, body: 'two', rating: 3 },
    { id: newId('fb'), project_id: projectId, beta_program_id: programId, beta_tester_id: stays.id, body: 'three' },
  ])
  const url = `/v1/beta/programs/${programId}/testers/${gone.id}`
  const res = await call(t, app, { method: 'DELETE', url, key })
  t.equal(res.status, 204)
  t.equal(res.raw, '')
  t.same(await db.select().from(beta_testers).where(eq(beta_testers.id, gone.id)), [])
  t.same(await db.select().from(beta_feedback).where(eq(beta_feedback.beta_tester_id, gone.id)), [], 'its feedback is gone')
  t.equal((await db.select().from(beta_feedback).where(eq(beta_feedback.beta_tester_id, stays.id))).length, 1, 'the other tester keeps theirs')
  t.equal((await call(t, app, { url, key })).status, 404)
  t.equal((await call(t, app, { method: 'DELETE', url, key })).status, 404, 'a second delete is 404')
  const list = await call(t, app, { url: `/v1/beta/programs/${programId}/testers`, key })
  t.same(
    list.json.data.map((x: { id: string }) => x.id),
    [stays.id],
  )
})

t.test('a deleted tester can enroll again, as a new tester with a new token', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { programId, testers } = await programWithTesters(t, app, key, ['back@example.com'])
  await call(t, app, { method: 'DELETE', url: `/v1/beta/programs/${programId}/testers/${testers[0].id}`, key })
  const again = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${programId}/testers`, key, body: { email: 'back@example.com' } })
  t.equal(again.status, 201)
  t.not(again.json.data.id, testers[0].id)
  t.not(again.json.data.token, testers[0].token)
})

t.test('a tester under a program that does not own it is 404 and survives', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const a = await programWithTesters(t, app, key, ['a@example.com'])
  const b = await programWithTesters(t, app, key, [])
  const res = await call(t, app, { method: 'DELETE', url: `/v1/beta/programs/${b.programId}/testers/${a.testers[0].id}`, key })
  t.equal(res.status, 404)
  t.equal((await call(t, app, { url: `/v1/beta/programs/${a.programId}/testers/${a.testers[0].id}`, key })).status, 200)
})

t.test("another project's tester is 404 and survives", async (t) => {
  const app = await testApp()
  const owner = await createProject()
  const other = await createProject()
  const { programId, testers } = await programWithTesters(t, app, owner.key, ['a@example.com'])
  const url = `/v1/beta/programs/${programId}/testers/${testers[0].id}`
  const res = await call(t, app, { method: 'DELETE', url, key: other.key })
  t.equal(res.status, 404)
  t.equal(res.json.code, 'not_found')
  t.equal((await call(t, app, { url, key: owner.key })).status, 200)
})

t.test('malformed ids are 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { programId } = await programWithTesters(t, app, key, [])
  for (const url of [`/v1/beta/programs/${programId}/testers/bp_AAAAAAAAAAAAAAAAAAAAA`, '/v1/beta/programs/x/testers/bt_AAAAAAAAAAAAAAAAAAAAA']) {
    const res = await call(t, app, { method: 'DELETE', url, key })
    t.equal(res.status, 404, url)
  }
})
