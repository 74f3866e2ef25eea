// An operation that takes no fields (every DELETE, and the POSTs that only act) accepts no body
// or `{}` (openapi.yaml's conventions, `EmptyBody`). A body sent anyway is held to the rules of
// every body: JSON (415 otherwise), at most 1 MiB (413), and no field, which is a 400 and changes
// nothing. A DELETE used to drop such a body unread, deleting anyway, and answered 413 and 415
// that its operation did not list.
import t, { type Test } from 'tap'
import { routes } from '../../generated/routes.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
type App = Awaited<ReturnType<typeof testApp>>

/** A resource of each operation that deletes: where to DELETE it, how to tell it still exists, and the request's credentials. */
interface Deletable {
  operationId: string
  url: string
  exists: () => Promise<boolean>
  auth: { key?: string; headers?: Record<string, string> }
}

async function deletables(t: Test, app: App): Promise<Deletable[]> {
  const { id: projectId, key } = await createProject()
  const post = async (url: string, body: object) => (await call(t, app, { method: 'POST', url, key, body })).json.data.id as string
  const found = (url: string, auth: Deletable['auth'] = { key }) => async () => (await call(t, app, { url, ...auth })).status === 200

  const program = await post('/v1/beta/programs', { name: 'Deletes', status: 'active' })
  const tester = await post(`/v1/beta/programs/${program}/testers`, { email: 'ada@example.com' })
  const entry = await post('/v1/changelog', { title: 'Goes', status: 'published' })
  const endpoint = await post('/v1/webhook-endpoints', { url: 'https://hooks.example.com/deletes' })
  const issued = await call(t, app, { method: 'POST', url: `/admin/v1/projects/${projectId}/api-keys`, headers: admin })
  const keyId = issued.json.data.id as string
  return [
    { operationId: 'deleteBetaTester', url: `/v1/beta/programs/${program}/testers/${tester}`, exists: found(`/v1/beta/programs/${program}/testers/${tester}`), auth: { key } },
    { operationId: 'deleteBetaProgram', url: `/v1/beta/programs/${program}`, exists: found(`/v1/beta/programs/${program}`), auth: { key } },
    { operationId: 'deleteChangelogEntry', url: `/v1/changelog/${entry}`, exists: found(`/v1/changelog/${entry}`), auth: { key } },
    { operationId: 'deleteWebhookEndpoint', url: `/v1/webhook-endpoints/${endpoint}`, exists: found(`/v1/webhook-endpoints/${endpoint}`), auth: { key } },
    {
      operationId: 'adminRevokeApiKey',
      url: `/admin/v1/projects/${projectId}/api-keys/${keyId}`,
      // A revoked key stays listed, with its revoked_at.
      exists: async () => (await call(t, app, { url: `/admin/v1/projects/${projectId}/api-keys`, headers: admin })).json.data.some((k: { id: string; revoked_at: string | null }) => k.id === keyId && k.revoked_at === null),
      auth: { headers: admin },
    },
  ]
}

t.test('every DELETE of the spec is tried here', async (t) => {
  const app = await testApp()
  const tried = (await deletables(t, app)).map((d) => d.operationId).sort()
  t.same(tried, routes.filter((r) => r.method === 'DELETE').map((r) => r.operationId).sort())
})

t.test('a DELETE refuses a body with a field, a body that is not JSON and one over 1 MiB, and deletes nothing', async (t) => {
  const app = await testApp()
  for (const d of await deletables(t, app)) {
    const del = (body: unknown, headers: Record<string, string> = {}) =>
      call(t, app, { method: 'DELETE', url: d.url, ...d.auth, body, headers: { ...d.auth.headers, ...headers } })

    const withField = await del({ id: 'ch_000000000000000000000' })
    t.equal(withField.status, 400, `${d.operationId}: a field`)
    t.match(withField.json, { code: 'validation_failed', errors: [{ in: 'body', path: '/id' }] })
    t.equal((await del([])).status, 400, `${d.operationId}: an array`)
    t.equal((await del('x', { 'content-type': 'text/plain' })).status, 415, `${d.operationId}: text`)
    t.equal((await del({ filler: 'x'.repeat(1024 * 1024) })).status, 413, `${d.operationId}: over 1 MiB`)
    t.ok(await d.exists(), `${d.operationId}: nothing was deleted`)

    t.equal((await del({})).status, 204, `${d.operationId}: {} deletes`)
    t.notOk(await d.exists(), `${d.operationId}: deleted`)
  }
})

t.test('a DELETE without a body deletes', async (t) => {
  const app = await testApp()
  for (const d of await deletables(t, app)) {
    t.equal((await call(t, app, { method: 'DELETE', url: d.url, ...d.auth })).status, 204, d.operationId)
    t.notOk(await d.exists(), `${d.operationId}: deleted`)
  }
})
