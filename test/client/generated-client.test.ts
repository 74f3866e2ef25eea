// A client generated the way partners do it (openapi-typescript types + openapi-fetch)
// type-checks against generated/ and makes real calls over HTTP.
import createClient from 'openapi-fetch'
import t from 'tap'
import type { paths } from '../../generated/api.js'
import { createProject, testApp } from '../helpers/app.js'

t.test('openapi-fetch with the generated types talks to a listening server', async (t) => {
  const app = await testApp({ port: 0 })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const { key } = await createProject()
  const client = createClient<paths>({ baseUrl: address, headers: { authorization: `Bearer ${key}` } })

  const health = await client.GET('/healthz')
  t.equal(health.data?.status, 'ok')

  const programs = await client.GET('/v1/beta/programs', { params: { query: { limit: 5 } } })
  t.equal(programs.response.status, 200)
  t.same(programs.data?.pagination, { limit: 5, offset: 0, has_more: false, next_cursor: null })

  const missing = await client.GET('/v1/changelog/{id}', { params: { path: { id: 'ch_000000000000000000000' } } })
  t.equal(missing.response.status, 404)
  t.equal(missing.error?.code, 'not_found', 'errors are typed as Problem')
})
