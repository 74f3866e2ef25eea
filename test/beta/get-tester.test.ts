import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

async function programWithTester(t: Test, app: FastifyInstance, key: string, email = 'tester@example.com') {
  const program = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Roster' } })).json.data
  const tester = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.id}/testers`, key, body: { email } })).json.data
  return { programId: program.id as string, tester }
}

t.test('GET …/testers/{id} returns the tester', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { programId, tester } = await programWithTester(t, app, key)
  const res = await call(t, app, { url: `/v1/beta/programs/${programId}/testers/${tester.id}`, key })
  t.equal(res.status, 200)
  t.same(res.json.data, tester)
})

t.test('a tester under a program that does not own it is 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const a = await programWithTester(t, app, key)
  const b = await programWithTester(t, app, key)
  const res = await call(t, app, { url: `/v1/beta/programs/${b.programId}/testers/${a.tester.id}`, key })
  t.equal(res.status, 404)
  t.equal(res.json.code, 'not_found')
})

t.test("another project's tester is a 404 shaped like a missing one", async (t) => {
  const app = await testApp()
  const owner = await createProject()
  const other = await createProject()
  const { programId, tester } = await programWithTester(t, app, owner.key)
  const foreign = await call(t, app, { url: `/v1/beta/programs/${programId}/testers/${tester.id}`, key: other.key })
  const otherProgram = await programWithTester(t, app, other.key)
  const missing = await call(t, app, { url: `/v1/beta/programs/${otherProgram.programId}/testers/bt_AAAAAAAAAAAAAAAAAAAAA`, key: other.key })
  t.equal(foreign.status, 404)
  const { request_id: _a, ...foreignBody } = foreign.json
  const { request_id: _b, ...missingBody } = missing.json
  t.same(foreignBody, missingBody)
})

t.test('malformed program or tester ids are 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const { programId, tester } = await programWithTester(t, app, key)
  const suffix = tester.id.slice(3)
  const urls = [
    `/v1/beta/programs/${programId}/testers/bp_${suffix}`,
    `/v1/beta/programs/${programId}/testers/bt_short`,
    `/v1/beta/programs/${programId}/testers/${tester.token}`,
    `/v1/beta/programs/bt_${programId.slice(3)}/testers/${tester.id}`,
    `/v1/beta/programs/nope/testers/${tester.id}`,
  ]
  for (const url of urls) {
    const res = await call(t, app, { url, key })
    t.equal(res.status, 404, url)
    t.equal(res.json.code, 'not_found')
  }
})

t.test('GET works on the free plan', async (t) => {
  const app = await testApp()
  const free = await createProject({ plan: 'free' })
  const res = await call(t, app, { url: '/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA/testers/bt_AAAAAAAAAAAAAAAAAAAAA', key: free.key })
  t.equal(res.status, 404, 'past the plan check: a read')
})
