// What npm run check:prism derives instead of keeping by hand (scripts/prism/derived.ts): the
// sample request of each operation, and the path of a missing resource for its 404.
import t from 'tap'
import { routes, type RouteSpec } from '../../generated/routes.js'
import { missingPath, sampler } from '../../scripts/prism/derived.js'
import type { Exchange } from '../../scripts/prism/observer.js'

const route = (operationId: string): RouteSpec => routes.find((r) => r.operationId === operationId)!
const PROGRAM = '/v1/beta/programs/bp_AAAAAAAAAAAAAAAAAAAAA'
const exchange = (operationId: string, method: string, path: string, status: number, sent: Exchange['sent'] = {}): Exchange => ({
  operationId,
  method,
  path,
  status,
  sent,
  violations: [],
  ms: 1,
})

t.test('an operation is sampled by its latest request that succeeded, body and all', async (t) => {
  const sample = sampler([
    exchange('updateBetaProgram', 'PATCH', PROGRAM, 200, { json: { name: 'First' } }),
    exchange('updateBetaProgram', 'PATCH', PROGRAM, 200, { json: { name: 'Second' } }),
    exchange('updateBetaProgram', 'PATCH', PROGRAM, 409, { json: { status: 'draft' } }),
  ])
  t.same(sample(route('updateBetaProgram')), { path: PROGRAM, sent: { json: { name: 'Second' } } })
})

t.test('without a success of its own, by one on its path, never on a resource deleted since', async (t) => {
  const spare = '/v1/beta/programs/bp_BBBBBBBBBBBBBBBBBBBBB'
  const sample = sampler([
    exchange('getBetaProgram', 'GET', `${PROGRAM}?x=1`, 200),
    exchange('getBetaProgram', 'GET', spare, 200),
    exchange('deleteBetaProgram', 'DELETE', spare, 204),
  ])
  t.same(sample(route('deleteBetaProgram')), { path: PROGRAM, sent: {} }, 'the deleted program is no sample, and the query stays with its operation')
  t.same(sample(route('getBetaProgram')), { path: `${PROGRAM}?x=1`, sent: {} })
})

t.test('a new path under a sampled one extends its sample', async (t) => {
  const sample = sampler([exchange('getBetaProgram', 'GET', PROGRAM, 200)])
  t.same(sample(route('listBetaTesters')), { path: `${PROGRAM}/testers`, sent: {} })
  t.equal(sample(route('getBetaTester')), undefined, 'a path with an id of its own needs a success on it')
  t.same(sample(route('listChangelogEntries')), { path: '/v1/changelog', sent: {} }, 'a path without ids is its own sample')
})

t.test('the missing resource of a sample is its last id, of the same kind, that exists nowhere', async (t) => {
  t.equal(missingPath(route('getBetaTester'), `${PROGRAM}/testers/bt_CCCCCCCCCCCCCCCCCCCCC?locale=fr`), `${PROGRAM}/testers/bt_000000000000000000000`)
  t.equal(missingPath(route('adminGetProject'), '/admin/v1/projects/prj_DDDDDDDDDDDDDDDDDDDDD'), '/admin/v1/projects/prj_000000000000000000000')
  t.equal(missingPath(route('getBetaSignupPage'), '/portal/prj_DDDDDDDDDDDDDDDDDDDDD/beta/open-beta'), undefined, 'a slug is no id')
  t.equal(missingPath(route('listChangelogEntries'), '/v1/changelog'), undefined)
})
