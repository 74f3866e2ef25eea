import { eq, inArray } from 'drizzle-orm'
import t from 'tap'
import { beta_feedback, beta_programs, beta_testers } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const URL = '/v1/beta/programs'

t.test('DELETE answers 204 with an empty body, and the program is gone', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = (await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Doomed' } })).json.data
  const res = await call(t, app, { method: 'DELETE', url: `${URL}/${program.id}`, key })
  t.equal(res.status, 204)
  t.equal(res.raw, '')
  t.equal((await call(t, app, { url: `${URL}/${program.id}`, key })).status, 404)
  t.equal((await call(t, app, { method: 'DELETE', url: `${URL}/${program.id}`, key })).status, 404, 'a second delete is 404')
  t.same((await call(t, app, { url: URL, key })).json.data, [])
})

t.test('DELETE removes the testers and all their feedback, and nothing of other programs', async (t) => {
  const app = await testApp()
  const { id: projectId, key } = await createProject()
  const { db } = await testDatabase()
  const doomed = (await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Doomed' } })).json.data
  const kept = (await call(t, app, { method: 'POST', url: URL, key, body: { name: 'Kept' } })).json.data
  const testers: Record<string, string[]> = { [doomed.id]: [], [kept.id]: [] }
  for (const program of [doomed, kept]) {
    for (const email of ['a@example.com', 'b@example.com']) {
      const res = await call(t, app, { method: 'POST', url: `${URL}/${program.id}/testers`, key, body: { email } })
      testers[program.id]!.push(res.json.data.id)
    }
  }
  const feedback = (programId: string) =>
    testers[programId]!.map((testerId) => ({ id: newId('fb'), project_id: projectId, beta_program_id: programId, beta_tester_id: testerId, body: 'Nice', rating: 5 }))
  await db.insert(beta_feedback).values([...feedback(doomed.id), ...feedback(kept.id)])

  const res = await call(t, app, { method: 'DELETE', url: `${URL}/${doomed.id}`, key })
  t.equal(res.status, 204)

  t.same(await db.select().from(beta_programs).where(eq(beta_programs.id, doomed.id)), [])
  t.same(await db.select().from(beta_testers).where(eq(beta_testers.beta_program_id, doomed.id)), [])
  t.same(await db.select().from(beta_testers).where(inArray(beta_testers.id, testers[doomed.id]!)), [])
  t.same(await db.select().from(beta_feedback).where(eq(beta_feedback.beta_program_id, doomed.id)), [])
  t.equal((await db.select().from(beta_testers).where(eq(beta_testers.beta_program_id, kept.id))).length, 2, 'the other program keeps its testers')
  t.equal((await db.select().from(beta_feedback).where(eq(beta_feedback.beta_program_id, kept.id))).length, 2, 'and their feedback')
})

t.test("another project's program is a 404 and survives", async (t) => {
  const app = await testApp()
  const owner = await createProject()
  const other = await createProject()
  const program = (await call(t, app, { method: 'POST', url: URL, key: owner.key, body: { name: 'Mine' } })).json.data
  const res = await call(t, app, { method: 'DELETE', url: `${URL}/${program.id}`, key: other.key })
  t.equal(res.status, 404)
  t.equal(res.json.code, 'not_found')
  t.equal((await call(t, app, { url: `${URL}/${program.id}`, key: owner.key })).status, 200)
})

t.test('malformed and unknown ids are 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const id of ['bp_AAAAAAAAAAAAAAAAAAAAA', 'bt_AAAAAAAAAAAAAAAAAAAAA', 'bp_', '0']) {
    const res = await call(t, app, { method: 'DELETE', url: `${URL}/${id}`, key })
    t.equal(res.status, 404, id)
  }
})
