// The examples a partner reads in /docs/, in Prism's mock answers and in generated doc comments
// tell one story per operation: what a request example writes, that operation's response
// example shows. Examples were valid against their schemas (the spec lint checks that) while a
// PATCH named `activate` sent `closed` and answered an `active` program, from one shared
// response example (found by a partner review).
import t from 'tap'
import { source } from '../helpers/spec-check.js'

type AnyObject = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

const resolve = (node: AnyObject): AnyObject =>
  typeof node?.$ref === 'string' ? resolve(node.$ref.slice(2).split('/').reduce((n: AnyObject, part: string) => n[part], source)) : node

/** Every example value of a media type object. */
const exampleValues = (media: AnyObject | undefined): AnyObject[] =>
  Object.values((media?.examples ?? {}) as AnyObject).map((example) => resolve(example).value)

/**
 * Whether a value written agrees with the value shown: the same, or the same once the server's
 * normalisation is applied (emails and labels lowercased, timestamps to milliseconds).
 */
function agrees(written: unknown, shown: unknown): boolean {
  if (Array.isArray(written) && Array.isArray(shown)) return written.length === shown.length && written.every((w, i) => agrees(w, shown[i]))
  if (typeof written === 'string' && typeof shown === 'string') {
    if (written.toLowerCase() === shown.toLowerCase()) return true
    const [a, b] = [Date.parse(written), Date.parse(shown)]
    return /^\d{4}-\d\d-\d\dT/.test(written) && !Number.isNaN(a) && a === b
  }
  return JSON.stringify(written) === JSON.stringify(shown)
}

const operations = Object.values(source.paths as AnyObject).flatMap((item: AnyObject) =>
  ['post', 'patch', 'put'].filter((method) => item[method]).map((method) => item[method] as AnyObject),
)

t.test("every field a request example writes is shown so in its operation's response examples", async (t) => {
  let compared = 0
  for (const operation of operations) {
    const written = exampleValues(resolve(operation.requestBody ?? {}).content?.['application/json'])
    const success = Object.entries(operation.responses as AnyObject).filter(([status]) => /^20[01]$/.test(status))
    const shown = success.flatMap(([, response]) => exampleValues(resolve(response).content?.['application/json']))
    for (const request of written) {
      for (const response of shown) {
        for (const [field, value] of Object.entries(request as AnyObject)) {
          if (!(field in (response.data ?? {}))) continue
          compared++
          t.ok(agrees(value, response.data[field]), `${operation.operationId}: ${field} written ${JSON.stringify(value)}, shown ${JSON.stringify(response.data[field])}`)
        }
      }
    }
  }
  t.ok(compared >= 20, `the examples were compared (${compared} fields)`)
})

t.test("a request example's name says what it sends", async (t) => {
  const update = source.paths['/v1/beta/programs/{id}'].patch.requestBody.content['application/json'].examples as AnyObject
  for (const [name, example] of Object.entries(update)) {
    const status = resolve(example as AnyObject).value.status as string | undefined
    if (status === undefined) continue
    const verb = { active: 'activate', closed: 'close', draft: 'draft' }[status]
    t.equal(name, verb, `the example sending status ${status} is named for it`)
  }
})

t.test("the test delivery's example is a webhook.test delivery not yet attempted, as the server answers", async (t) => {
  const test = source.paths['/v1/webhook-endpoints/{id}/test'].post
  const [example] = exampleValues(resolve(test.responses['202']).content['application/json'])
  t.match(example?.data, { event_type: 'webhook.test', status: 'pending', attempts: 0, last_attempt_at: null, last_response_status: null, last_error: null })
})

t.test('a rotated secret is not the secret the endpoint was created with', async (t) => {
  const created = exampleValues(resolve(source.paths['/v1/webhook-endpoints'].post.responses['201']).content['application/json'])
  const rotated = exampleValues(resolve(source.paths['/v1/webhook-endpoints/{id}/rotate-secret'].post.responses['200']).content['application/json'])
  t.ok(created.length > 0 && rotated.length > 0)
  for (const r of rotated) t.notOk(created.some((c) => c.secret === r.secret), 'a new secret')
})
