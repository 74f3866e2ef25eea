// An endpoint's url, on create and update alike: parsed as browsers parse it (no user info, no
// fragment, http or https), and, unless the deployment allows private networks, not a host
// written as a forbidden address nor localhost.
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { createEndpoint } from './helpers.js'

const MALFORMED = [
  'https://user@hooks.example.com/',
  'https://user:secret@hooks.example.com/',
  'https://hooks.example.com@evil.example/',
  'https://hooks.example.com%40evil.example/',
  'https://hooks.example.com/in#section',
  'https://hooks.example.com/in#',
  'ftp://hooks.example.com/',
  'hooks.example.com/in',
  '//hooks.example.com/in',
  'https://',
  'https://hooks.example.com:99999/',
  'https://hooks example.com/',
  `https://hooks.example.com/${'x'.repeat(2048)}`,
]

/** Internationalized host names: refused, with a message that asks for the ASCII form; that form is stored as sent. */
const IDN: [unicode: string, ascii: string][] = [
  ['https://bücher.example/hook', 'https://xn--bcher-kva.example/hook'],
  ['https://hooks.例え.jp/in', 'https://hooks.xn--r8jz45g.jp/in'],
  ['https://münchen.example:8443/', 'https://xn--mnchen-3ya.example:8443/'],
]

const PRIVATE = [
  'http://127.0.0.1/hook',
  'http://127.1:8080/hook',
  'http://0x7f.0.0.1/hook',
  'http://2130706433/hook',
  'http://0.0.0.0/',
  'https://10.0.0.5/hook',
  'https://172.16.3.4/',
  'https://192.168.1.1/',
  'http://169.254.169.254/latest/meta-data/',
  'http://100.64.0.1/',
  'http://[::1]/hook',
  'http://[::]/',
  'http://[::ffff:127.0.0.1]/hook',
  'http://[::ffff:10.0.0.5]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[fd00::1]/',
  'http://[fe80::1]/',
  'https://192.0.2.10/',
  'https://203.0.113.7/hook',
  'http://255.255.255.255/',
  'https://[2001:db8::1]/',
  'http://[2002:7f00:1::]/',
  'http://[64:ff9b::a9fe:a9fe]/latest/meta-data/',
  'http://[64:ff9b:1::808:808]/',
  'http://[fec0::1]/',
  'http://localhost/hook',
  'http://LOCALHOST:3000/hook',
  'http://localhost./hook',
  'http://api.localhost/hook',
  'http://a.b.localhost/',
]

const PUBLIC = [
  'https://hooks.example.com/feedback',
  'HTTPS://HOOKS.EXAMPLE.COM/IN',
  'http://hooks.example.com:8080/in?source=feedback&x=1',
  'https://93.184.216.34/hook',
  'https://[2606:4700::6810:85e5]/hook',
  'https://[64:ff9b::5db8:d822]/hook',
  'https://[2002:5db8:d822::1]/hook',
  'https://localhost.example.com/hook',
  'https://mylocalhost/hook',
  'https://hooks.example.com/@team/in',
]

async function refuses(t: Test, app: FastifyInstance, key: string, endpoint: string, url: string, rule: RegExp) {
  for (const [method, path] of [['POST', '/v1/webhook-endpoints'], ['PATCH', endpoint]] as const) {
    const res = await call(t, app, { method, url: path, key, body: { url } })
    t.equal(res.status, 400, `${method} ${url}`)
    t.equal(res.json.code, 'validation_failed')
    t.same(res.json.errors?.map((e: { in: string; path: string }) => `${e.in}${e.path}`), ['body/url'], 'errors[] names the url, alone')
    t.match(res.json.detail, /^body\/url /, 'the detail names the field')
    t.match(res.json.detail, rule, 'and the rule')
  }
}

t.test('a url with user info, a fragment, another scheme or no host is 400, on create and update', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  for (const url of MALFORMED) await refuses(t, app, key, endpoint.url, url, /must be an absolute http or https URL of at most 2048 characters, with a host, no user info and no fragment/)
  t.same((await call(t, app, { url: endpoint.url, key })).json.data, endpoint.data, 'the endpoint is unchanged')
  t.equal((await call(t, app, { url: '/v1/webhook-endpoints', key })).json.data.length, 1, 'and no other was made')
})

t.test('port 0 is 400, however it is written, with private networks allowed too', async (t) => {
  for (const config of [{}, { webhookAllowPrivateNetworks: true }]) {
    const app = await testApp(config)
    const { key } = await createProject()
    const endpoint = await createEndpoint(t, app, key)
    for (const url of ['https://hooks.example.com:0/hook', 'http://hooks.example.com:00/', 'https://93.184.216.34:0/']) {
      await refuses(t, app, key, endpoint.url, url, /must not use port 0/)
    }
    const explicit = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: 'https://hooks.example.com:10/hook' } })
    t.equal(explicit.status, 201, 'a port that is not 0 is accepted')
  }
})

t.test('an internationalized host name is 400, asking for its ASCII (punycode) form, which is stored as sent', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  for (const [unicode, ascii] of IDN) {
    await refuses(t, app, key, endpoint.url, unicode, /written in ASCII \(a host name in its ASCII form, xn-- punycode for an internationalized one/)
    t.equal(new URL(unicode).href, ascii, 'the form a browser would use')
    const created = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url: ascii } })
    t.equal(created.status, 201, ascii)
    t.equal(created.json.data.url, ascii, 'stored as sent')
    await call(t, app, { method: 'DELETE', url: `/v1/webhook-endpoints/${created.json.data.id}`, key })
  }
})

t.test('a host written as a loopback, private, link-local, unique-local or other non-public address, or localhost, is 400', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  for (const url of PRIVATE) await refuses(t, app, key, endpoint.url, url, /must not point to a loopback, private, link-local, unique-local or other non-public address, or to localhost/)
  t.same((await call(t, app, { url: endpoint.url, key })).json.data, endpoint.data, 'the endpoint is unchanged')
})

t.test('public hosts, names and addresses, are accepted as sent', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  for (const url of PUBLIC) {
    const created = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url } })
    t.equal(created.status, 201, url)
    t.equal(created.json.data.url, url)
    await call(t, app, { method: 'DELETE', url: `/v1/webhook-endpoints/${created.json.data.id}`, key })
    const updated = await call(t, app, { method: 'PATCH', url: endpoint.url, key, body: { url } })
    t.equal(updated.status, 200, `PATCH ${url}`)
    t.equal(updated.json.data.url, url)
  }
})

t.test('with WEBHOOK_ALLOW_PRIVATE_NETWORKS, private and local hosts are accepted; the URL rules still hold', async (t) => {
  const app = await testApp({ webhookAllowPrivateNetworks: true })
  const { key } = await createProject()
  const endpoint = await createEndpoint(t, app, key)
  for (const url of ['http://127.0.0.1:3000/hook', 'http://[::1]/hook', 'http://localhost:8080/in', 'http://169.254.169.254/', 'http://[::ffff:127.0.0.1]/']) {
    const created = await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url } })
    t.equal(created.status, 201, url)
    await call(t, app, { method: 'DELETE', url: `/v1/webhook-endpoints/${created.json.data.id}`, key })
    t.equal((await call(t, app, { method: 'PATCH', url: endpoint.url, key, body: { url } })).status, 200, `PATCH ${url}`)
  }
  for (const url of ['http://user@localhost/', 'http://localhost/#top', 'ftp://127.0.0.1/']) {
    t.equal((await call(t, app, { method: 'POST', url: '/v1/webhook-endpoints', key, body: { url } })).status, 400, url)
  }
})
