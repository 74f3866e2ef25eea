// Response headers that limit what a browser does with an answer (contract §11): nosniff on
// every response, a policy that forbids everything on the feeds, and on /docs/ a policy that
// lets only the reference's own script run.
import { createHash } from 'node:crypto'
import t from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'

t.test('every response sends X-Content-Type-Options: nosniff', async (t) => {
  const app = await testApp()
  const { id, key } = await createProject()
  await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Out', status: 'published' } })
  const atom = await call(t, app, { url: `/portal/${id}/changelog.atom` })
  const requests = [
    { url: '/v1/changelog', key }, // 200
    { url: '/v1/changelog', key, headers: { 'if-none-match': String(atom.headers.etag) } }, // 200 or 304
    { url: '/v1/changelog' }, // 401
    { url: '/v1/changelog?limit=0', key }, // 400
    { method: 'POST' as const, url: '/v1/changelog', key, body: '{' }, // 400 invalid_json
    { url: '/v1/changelog/ch_000000000000000000000', key }, // 404
    { method: 'PUT' as const, url: '/v1/changelog', key }, // 405
    { url: '/v1/changelog/%E0%A4%A', key }, // a router error: undecodable URL
    { url: '/nowhere' }, // 404 outside the API
    { url: `/portal/${id}/changelog` }, // page
    { url: '/portal/prj_000000000000000000000/changelog' }, // 404 page
    { url: `/portal/${id}/changelog.atom` },
    { url: `/portal/${id}/changelog.json` },
    { url: `/portal/${id}/changelog.atom`, headers: { 'if-none-match': String(atom.headers.etag) } }, // 304
    { url: '/docs/' },
    { url: '/openapi.json' },
    { url: '/openapi.yaml' },
    { url: '/healthz' },
    { url: '/readyz' },
    { method: 'HEAD' as const, url: '/healthz' },
  ]
  for (const request of requests) {
    const res = await call(t, app, request)
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${request.method ?? 'GET'} ${request.url} → ${res.status}`)
  }
  // Served by the reference's plugin outside the spec: the redirect and the script.
  for (const url of ['/docs', '/docs/js/scalar.js']) {
    const res = await app.inject({ url })
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
  }
})

t.test("the feeds send Content-Security-Policy: default-src 'none', on 304s too", async (t) => {
  const app = await testApp()
  const { id, key } = await createProject()
  await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: '<script>alert(1)</script>', status: 'published' } })
  for (const feed of ['changelog.atom', 'changelog.json']) {
    const res = await call(t, app, { url: `/portal/${id}/${feed}` })
    t.equal(res.status, 200)
    t.equal(res.headers['content-security-policy'], "default-src 'none'", feed)
    const again = await call(t, app, { url: `/portal/${id}/${feed}`, headers: { 'if-none-match': String(res.headers.etag) } })
    t.equal(again.status, 304)
    t.equal(again.headers['content-security-policy'], "default-src 'none'", `${feed} 304`)
  }
})

t.test('/docs/ lets only its own script run, and loads nothing from elsewhere', async (t) => {
  const app = await testApp()
  const res = await call(t, app, { url: '/docs/' })
  t.equal(res.status, 200)
  const policy = String(res.headers['content-security-policy'] ?? '')
  const directives = new Map(policy.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]))
  t.same(directives.get('default-src'), ["'none'"])

  // What the page loads: scripts by src, and inline scripts, which need a hash.
  const sources = [...res.raw.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!)
  const inline = [...res.raw.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]!)
  t.ok(sources.length >= 1 && inline.length >= 1, 'the page has its script and a start-up script')
  const hashes = inline.map((body) => `'sha256-${createHash('sha256').update(body).digest('base64')}'`)
  t.same(directives.get('script-src'), ["'self'", ...hashes], 'its own script, and the inline one by hash: no unsafe-inline, no eval')
  for (const src of sources) {
    t.notMatch(src, /^(https?:)?\/\//, `${src} is served from this origin`)
    const script = await app.inject({ url: new URL(src, 'http://test/docs/').pathname })
    t.equal(script.statusCode, 200, src)
    t.match(script.headers['content-type'], /javascript/)
  }
  t.notMatch(res.raw, /\b(href|src)="(https?:)?\/\//, 'no link or source on another origin')
  t.match(inline.join(''), /"withDefaultFonts": false/, "Scalar's fonts from fonts.scalar.com are off")
  t.same(directives.get('connect-src'), ["'self'"], 'the spec, fetched from this origin')
  t.same(directives.get('frame-ancestors'), ["'none'"])
  t.notOk(policy.includes('unsafe-eval'))
  t.notOk(policy.includes('https:') || policy.includes('http:'), 'no other origin anywhere in the policy')
})
