// access_url is parsed, not matched by an unanchored pattern (contract §11): an absolute http(s)
// URL with a host, no user info, no spaces or control characters; on create and update alike.
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

const REFUSED = [
  'https://testflight.apple.com@evil.example/join',
  'https://a.example@b.example/',
  'https://user:secret@a.example/',
  'https://@a.example/',
  'https://a.example%40b.example/',
  'https://a.example\\@b.example/',
  'http://',
  'http:///join',
  'https://:443/',
  'https://a.example:99999/',
  'https://exa mple.example/',
  'https://a.example/join now',
  'https://a.example/\u0001',
  'https://a.example/\t',
  ' https://a.example/',
  'ftp://a.example/',
  'javascript:alert(1)//https://a.example/',
  '//a.example/',
  `https://a.example/${'x'.repeat(2048)}`,
]

const ACCEPTED = [
  'https://testflight.apple.com/join/abc123',
  'HTTPS://A.EXAMPLE',
  'http://127.0.0.1:3000/build?x=1#notes',
  'https://[2001:db8::1]:8443/',
  'https://a.example/@team/app',
  'https://a.example/join?ref=mail@example.com',
]

t.test('access_url with user info, no host or characters a URL cannot hold is a 400 naming the field', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Links' } })).json.data.id as string
  for (const access_url of REFUSED) {
    for (const [method, url, body] of [
      ['POST', '/v1/beta/programs', { name: 'Link', access_url }],
      ['PATCH', `/v1/beta/programs/${program}`, { access_url }],
    ] as const) {
      const res = await call(t, app, { method, url, key, body })
      t.equal(res.status, 400, `${method} ${JSON.stringify(access_url)}`)
      t.equal(res.json.code, 'validation_failed')
      t.equal(res.json.errors?.[0]?.path, '/access_url')
      const rule = /must be an absolute http or https URL of at most 2048 characters, with a host and no user info/
      t.match(res.json.detail, /^body\/access_url /, 'the detail names the field')
      t.match(res.json.detail, rule, 'and the rule')
    }
  }
  const unchanged = await call(t, app, { url: `/v1/beta/programs/${program}`, key })
  t.equal(unchanged.json.data.access_url, null, 'nothing was written')
})

t.test('absolute http(s) URLs with a host are accepted as sent, and null clears', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  for (const access_url of ACCEPTED) {
    const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Link', access_url } })
    t.equal(res.status, 201, access_url)
    t.equal(res.json.data.access_url, access_url)
    const cleared = await call(t, app, { method: 'PATCH', url: `/v1/beta/programs/${res.json.data.id}`, key, body: { access_url: null } })
    t.equal(cleared.json.data.access_url, null)
  }
})
