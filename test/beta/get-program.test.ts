import t from 'tap'
import { beta_programs } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

t.test('GET /v1/beta/programs/{id} returns the program', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Fetch me', summary: 'S' } })
  const res = await call(t, app, { url: `/v1/beta/programs/${created.json.data.id}`, key })
  t.equal(res.status, 200)
  t.same(res.json, created.json)
})

t.test('GET works on the free plan: reads need no Pro plan', async (t) => {
  const app = await testApp()
  const free = await createProject({ plan: 'free' })
  const { db } = await testDatabase()
  const id = newId('bp')
  await db.insert(beta_programs).values({ id, project_id: free.id, name: 'Made while on Pro', slug: 'made-while-on-pro' })
  const res = await call(t, app, { url: `/v1/beta/programs/${id}`, key: free.key })
  t.equal(res.status, 200)
  t.equal(res.json.data.name, 'Made while on Pro')
})

t.test("another project's program is a 404 shaped exactly like a missing one", async (t) => {
  const app = await testApp()
  const owner = await createProject()
  const other = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: owner.key, body: { name: 'Private' } })
  const foreign = await call(t, app, { url: `/v1/beta/programs/${created.json.data.id}`, key: other.key })
  const missing = await call(t, app, { url: '/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA', key: other.key })
  t.equal(foreign.status, 404)
  t.equal(foreign.json.code, 'not_found')
  const { request_id: _a, ...foreignBody } = foreign.json
  const { request_id: _b, ...missingBody } = missing.json
  t.same(foreignBody, missingBody)
})

t.test('an id of the wrong shape or prefix is a 404', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Shape' } })
  const suffix = created.json.data.id.slice(3)
  for (const id of [`bt_${suffix}`, `ch_${suffix}`, 'bp_short', `bp_${suffix}x`, 'nope', `BP_${suffix}`, "bp_'; drop table x;--", '%E2%82%AC']) {
    const res = await call(t, app, { url: `/v1/beta/programs/${id}`, key })
    t.equal(res.status, 404, id)
    t.equal(res.json.code, 'not_found', id)
  }
})
