// Each webhook list (endpoints, an endpoint's deliveries, the event log) is served by an index in
// its own order, whatever its filter, by the project's id and by the API key alike: no Sort node,
// and a cursor is an index condition.
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { hashApiKey } from '../../src/domain/secrets.js'
import { createProject } from '../helpers/app.js'
import { explainPlan, indexScans, sortsBeyondAPage, testDatabase } from '../helpers/db.js'

t.test('endpoint, delivery and event lists read their indexes in order, without sorting', async (t) => {
  const repos = makeRepos((await testDatabase()).db)
  const { id: projectId, key } = await createProject()
  const at = new Date('2026-01-01T00:00:00.000Z')
  const endpointId = 'we_AAAAAAAAAAAAAAAAAAAAA'
  for (const scope of [projectId, { keyHash: hashApiKey(key), beta: false }]) {
    const by = typeof scope === 'string' ? 'by id' : 'by key'
    const plans: [string, RegExp, Parameters<typeof explainPlan>[0]][] = []
    for (const after of [undefined, { at, id: 'zz_zzzzzzzzzzzzzzzzzzzzz' }]) {
      const page = { limit: 26, offset: 0, after }
      const where = `${by}, ${after ? 'cursor' : 'offset'}`
      plans.push([`endpoints (${where})`, /^webhook_endpoints_project_created_idx$/, repos.webhooks.endpointsQuery(scope, page)])
      for (const status of [undefined, 'failed'] as const) {
        const index = status ? /^webhook_deliveries_endpoint_status_created_idx$/ : /^webhook_deliveries_endpoint_(status_)?created_idx$/
        plans.push([`deliveries, status ${status} (${where})`, index, repos.webhooks.deliveriesQuery(scope, endpointId, { ...page, status })])
      }
      for (const type of [undefined, 'beta_tester.joined']) {
        const index = type ? /^events_project_type_created_idx$/ : /^events_project_(type_)?created_idx$/
        plans.push([`events, type ${type} (${where})`, index, repos.webhooks.eventsQuery(scope, { ...page, type })])
      }
    }
    for (const [what, index, query] of plans) {
      const plan = await explainPlan(query)
      // The list's own index (a delivery list also reads its endpoint, once, by another).
      const scan = indexScans(plan).find((s) => index.test(s.index))
      t.match(scan?.index, index, `${what}: the list's index`)
      t.notOk(sortsBeyondAPage(plan), `${what}: no Sort`)
      t.notMatch(plan, /Seq Scan/, `${what}: no sequential scan`)
      if (what.includes('cursor')) t.match(scan?.cond, /ROW\(created_at, id\) < ROW\(/, `${what}: the cursor is an index condition`)
    }
  }
})
