// An endpoint's signing secret is answered by create and rotate-secret only: no read, list,
// update, test delivery, event or delivery record holds it, and no log line, at any level.
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { call, createProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { HOOK_URL, SECRET } from './helpers.js'

t.test('the secret is answered by create and rotate-secret alone, and never logged', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const app = await buildApp({ ...defaults, logLevel: 'trace' }, await testDatabase(), { logger: { stream } })
  t.teardown(() => app.close())
  const { key } = await createProject()

  const answers: { what: string; raw: string }[] = []
  const send = async (what: string, options: Parameters<typeof call>[2]) => {
    const res = await call(t, app, { key, ...options })
    answers.push({ what, raw: res.raw })
    return res
  }
  const created = await send('create', { method: 'POST', url: '/v1/webhook-endpoints', body: { url: HOOK_URL }, headers: { 'idempotency-key': 'secret-1' } })
  const replayed = await send('create, replayed', { method: 'POST', url: '/v1/webhook-endpoints', body: { url: HOOK_URL }, headers: { 'idempotency-key': 'secret-1' } })
  const url = `/v1/webhook-endpoints/${created.json.data.id}`
  const rotated = await send('rotate-secret', { method: 'POST', url: `${url}/rotate-secret` })
  const secrets = [created.json.secret as string, rotated.json.secret as string]
  for (const secret of secrets) t.match(secret, SECRET)
  t.equal(replayed.json.secret, secrets[0], 'a replayed create answers the same secret')

  await send('get', { url })
  await send('list', { url: '/v1/webhook-endpoints' })
  await send('update', { method: 'PATCH', url, body: { description: 'Secretless' } })
  const delivery = (await send('test', { method: 'POST', url: `${url}/test` })).json.data
  await send('deliveries', { url: `${url}/deliveries` })
  await send('delivery', { url: `${url}/deliveries/${delivery.id}` })
  await send('retry', { method: 'POST', url: `${url}/deliveries/${delivery.id}/retry` })
  await send('events', { url: '/v1/events' })
  await send('event', { url: `/v1/events/${delivery.event_id}` })
  await send('refused update', { method: 'PATCH', url, body: { url: 'http://localhost/' } })

  const answering = new Set(['create', 'create, replayed', 'rotate-secret'])
  for (const { what, raw } of answers) {
    const holds = secrets.some((secret) => raw.includes(secret)) || raw.includes('whsec_')
    t.equal(holds, answering.has(what), `${what}: ${answering.has(what) ? 'answers' : 'holds no'} secret`)
  }
  const log = lines.join('')
  t.ok(log.length > 0, 'the requests were logged')
  for (const secret of secrets) t.notOk(log.includes(secret), 'no secret in the log')
  t.notOk(log.includes('whsec_'))
})
