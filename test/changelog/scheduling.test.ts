import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { scheduledTimeArrives } from '../helpers/db.js'

t.test('a scheduled entry appears in the list by itself once its time has passed', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const at = new Date(Date.now() + 3_600_000).toISOString()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Soon', status: 'scheduled', published_at: at } })
  t.equal(created.status, 201)
  const id = created.json.data.id

  const before = await call(t, app, { url: '/v1/changelog', key })
  t.strictSame(before.json.data, [], 'absent while scheduled')
  const fr = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key, body: { locale: 'fr', title: 'Bientôt' } })
  t.equal(fr.status, 200)
  t.equal((await call(t, app, { url: `/v1/changelog/${id}`, key })).status, 200, 'but readable by id')

  // No job or timer publishes it: the list compares published_at with now() when it runs.
  const arrived = await scheduledTimeArrives(id)

  const after = await call(t, app, { url: '/v1/changelog?locale=fr', key })
  t.match(after.json.data, [{ id, title: 'Bientôt', locale: 'fr', published_at: arrived, status: 'published' }], 'present once the time has passed')
})
