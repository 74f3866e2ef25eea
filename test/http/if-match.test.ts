// If-Match is checked in the statement that writes (db/repos/etag.ts): of several writes holding
// one tag, exactly one succeeds, and a conditional write costs what any write does (one unit of
// the key's budget, one key lookup), with no read replayed before it.
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type * as AppModule from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { makeRepos, type Repos } from '../../src/db/repos/index.js'
import { byHand } from '../../src/http/key-usage.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

/** Sends `bodies` at once, each as a PATCH with the same If-Match. */
async function racingPatches(t: Test, app: FastifyInstance, key: string, url: string, etag: string, bodies: object[]) {
  return Promise.all(bodies.map((body) => call(t, app, { method: 'PATCH', url, key, body, headers: { 'if-match': etag } })))
}

/** Exactly one of `results` is a 200, the others 412, and what is stored is the winner's answer. */
async function oneWins(t: Test, app: FastifyInstance, key: string, url: string, results: { status: number; json: any; headers: any }[]) {
  const statuses = results.map((r) => r.status).sort()
  t.same(statuses, [200, ...Array(results.length - 1).fill(412)], 'one write wins, every other is 412')
  const winner = results.find((r) => r.status === 200)!
  const now = await call(t, app, { url, key })
  t.same(now.json.data, winner.json.data, "what is stored is the winner's answer")
  t.equal(now.headers.etag, winner.headers.etag, "the winner's ETag is the new GET's")
  return winner
}

const ROUNDS = 3
const WRITERS = 4

t.test('PATCH of a beta program: of writes holding one tag, exactly one wins', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Race' } })
  const url = `/v1/beta/programs/${created.json.data.id}`
  for (let round = 0; round < ROUNDS; round++) {
    const etag = String((await call(t, app, { url, key })).headers.etag)
    const bodies = Array.from({ length: WRITERS }, (_, i) => ({ summary: `round ${round}, writer ${i}` }))
    await oneWins(t, app, key, url, await racingPatches(t, app, key, url, etag, bodies))
  }
})

t.test('PATCH of a changelog entry, in its base locale and in a translation: exactly one wins', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Race' } })
  const url = `/v1/changelog/${created.json.data.id}`
  for (let round = 0; round < ROUNDS; round++) {
    const etag = String((await call(t, app, { url, key })).headers.etag)
    const bodies = Array.from({ length: WRITERS }, (_, i) => ({ title: `round ${round}, writer ${i}` }))
    await oneWins(t, app, key, url, await racingPatches(t, app, key, url, etag, bodies))

    const fr = await call(t, app, { url: `${url}?locale=fr`, key })
    const frBodies = Array.from({ length: WRITERS }, (_, i) => ({ locale: 'fr', title: `tour ${round}, auteur ${i}` }))
    await oneWins(t, app, key, `${url}?locale=fr`, await racingPatches(t, app, key, url, String(fr.headers.etag), frBodies))
  }
})

t.test('PATCH of a tester against DELETE of it, holding one tag: exactly one wins', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Testers' } })
  for (let round = 0; round < ROUNDS; round++) {
    const tester = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program.json.data.id}/testers`, key, body: { email: `r${round}@example.com` } })
    const url = `/v1/beta/programs/${program.json.data.id}/testers/${tester.json.data.id}`
    const etag = String((await call(t, app, { url, key })).headers.etag)
    const results = await Promise.all([
      call(t, app, { method: 'PATCH', url, key, body: { status: 'revoked' }, headers: { 'if-match': etag } }),
      call(t, app, { method: 'DELETE', url, key, headers: { 'if-match': etag } }),
    ])
    const statuses = results.map((r) => r.status)
    // A PATCH that comes after the DELETE finds nothing: 404, as for any missing resource.
    t.ok(
      (statuses[0] === 200 && statuses[1] === 412) || ((statuses[0] === 412 || statuses[0] === 404) && statuses[1] === 204),
      `one of PATCH and DELETE wins, the other changes nothing (${statuses.join(', ')})`,
    )
    const after = await call(t, app, { url, key })
    t.equal(after.status, statuses[1] === 204 ? 404 : 200, 'the winner is what happened')
  }
})

t.test('PATCH of a translation against DELETE of it, holding one tag: exactly one wins', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Hello' } })
  const url = `/v1/changelog/${created.json.data.id}`
  for (let round = 0; round < ROUNDS; round++) {
    await call(t, app, { method: 'PATCH', url, key, body: { locale: 'fr', title: `Bonjour ${round}` } })
    const etag = String((await call(t, app, { url: `${url}?locale=fr`, key })).headers.etag)
    const [patched, deleted] = await Promise.all([
      call(t, app, { method: 'PATCH', url, key, body: { locale: 'fr', title: `Salut ${round}` }, headers: { 'if-match': etag } }),
      call(t, app, { method: 'DELETE', url: `${url}?locale=fr`, key, headers: { 'if-match': etag } }),
    ])
    t.same([patched.status, deleted.status].sort(), patched.status === 200 ? [200, 412] : [204, 412], 'one wins, the other is 412')
    const after = await call(t, app, { url: `${url}?locale=fr`, key })
    t.equal(after.json.data.locale, patched.status === 200 ? 'fr' : 'en', 'the winner is what happened')
  }
})

t.test('a conditional PATCH costs one unit of the budget and one key lookup, and replays no read', async (t) => {
  // Every repository call the app makes, with whether it was scoped by the API key (a key-scoped
  // read looks the key up in its own statement).
  // A write that records an event runs in repos.transaction: the repositories it hands the
  // handler are counted too.
  const calls: string[] = []
  const counted = new WeakSet<Repos>()
  const count = (repos: Repos): Repos => {
    if (counted.has(repos)) return repos
    counted.add(repos)
    for (const [name, repo] of Object.entries(repos)) {
      for (const [method, fn] of Object.entries(repo)) {
        if (typeof fn !== 'function') continue
        ;(repo as Record<string, unknown>)[method] = (...args: unknown[]) => {
          const keyScoped = args.some((arg) => typeof arg === 'object' && arg !== null && 'keyHash' in arg)
          calls.push(`${name}.${method}${keyScoped ? ' (by key)' : ''}`)
          return (fn as (...a: unknown[]) => unknown).apply(repo, args)
        }
      }
    }
    const transaction = repos.transaction
    repos.transaction = (work) => transaction((tx) => work(count(tx)))
    return repos
  }
  const counting: typeof makeRepos = (db) => count(makeRepos(db))
  const { buildApp } = await t.mockImport<typeof AppModule>('../../src/app.js', { '../../src/db/repos/index.js': { makeRepos: counting } })
  // last_used_at is written by flushes the test does not run (byHand): only the requests' own calls are counted.
  const app = await buildApp({ ...defaults, logLevel: 'silent', authFailuresPerMinute: 1_000_000 }, await testDatabase(), { keyUsage: { schedule: byHand } })
  t.teardown(() => app.close())
  const { key } = await createProject()

  const cases = [
    { create: { url: '/v1/beta/programs', body: { name: 'Counted' } }, patch: { summary: 'changed' }, write: 'programs.update' },
    { create: { url: '/v1/changelog', body: { title: 'Counted' } }, patch: { title: 'changed' }, write: 'changelog.update' },
  ]
  for (const c of cases) {
    const created = await call(t, app, { method: 'POST', url: c.create.url, key, body: c.create.body })
    const url = `${c.create.url}/${created.json.data.id}`
    const read = await call(t, app, { url, key })
    for (const [header, status] of [[String(read.headers.etag), 200], ['"stale"', 412]] as const) {
      const remaining = async () => Number((await call(t, app, { url, key })).headers['ratelimit-remaining'])
      const before = await remaining()
      calls.length = 0
      const res = await call(t, app, { method: 'PATCH', url, key, body: c.patch, headers: { 'if-match': header } })
      t.equal(res.status, status)
      const patchCalls = [...calls]
      // The next request's header shows what the PATCH spent in all (the GET below spends one).
      t.equal(await remaining(), before - 2, `${status}: one unit of the key's budget`)
      calls.splice(0, calls.length, ...patchCalls)
      const lookups = calls.filter((name) => name === 'projects.findByKeyHash' || name.endsWith('(by key)'))
      t.same(lookups, ['projects.findByKeyHash'], `${status}: one key lookup`)
      t.same(
        calls.filter((name) => name !== 'projects.findByKeyHash'),
        [c.write],
        `${status}: the write alone, no read before it`,
      )
    }
  }
})

t.test('If-Match: * requires the resource, a weak or unknown tag matches nothing', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Star' } })
  const url = `/v1/beta/programs/${created.json.data.id}`
  const etag = String((await call(t, app, { url, key })).headers.etag)
  t.equal((await call(t, app, { method: 'PATCH', url, key, body: { summary: 'a' }, headers: { 'if-match': `W/${etag}` } })).status, 412, 'a weak tag never matches')
  t.equal((await call(t, app, { method: 'PATCH', url, key, body: { summary: 'a' }, headers: { 'if-match': '*' } })).status, 200, '* matches any current one')
  const now = String((await call(t, app, { url, key })).headers.etag)
  t.equal((await call(t, app, { method: 'PATCH', url, key, body: { summary: 'b' }, headers: { 'if-match': `"x", ${now}` } })).status, 200, 'one of a list')
  t.equal((await call(t, app, { method: 'PATCH', url, key, body: {}, headers: { 'if-match': now } })).status, 412, 'an empty PATCH checks the tag too')
  t.equal((await call(t, app, { method: 'DELETE', url, key, headers: { 'if-match': '"x"' } })).status, 412)
  t.equal((await call(t, app, { method: 'DELETE', url, key, headers: { 'if-match': '*' } })).status, 204)
  t.equal((await call(t, app, { method: 'DELETE', url, key, headers: { 'if-match': '*' } })).status, 404, 'a missing resource is 404, whatever the tag')
  t.equal((await call(t, app, { method: 'PATCH', url, key, body: { summary: 'c' }, headers: { 'if-match': '"x"' } })).status, 404)
})

t.test('deleting a translation changes the entry: a tag read before it is stale', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Hello' } })
  const url = `/v1/changelog/${created.json.data.id}`
  await call(t, app, { method: 'PATCH', url, key, body: { locale: 'fr', title: 'Bonjour' } })
  const fr = String((await call(t, app, { url: `${url}?locale=fr`, key })).headers.etag)
  t.equal((await call(t, app, { method: 'DELETE', url: `${url}?locale=fr`, key, headers: { 'if-match': '"x"' } })).status, 412)
  t.equal((await call(t, app, { method: 'DELETE', url: `${url}?locale=fr`, key, headers: { 'if-match': fr } })).status, 204)
  const stale = await call(t, app, { method: 'PATCH', url, key, body: { locale: 'fr', title: 'Salut' }, headers: { 'if-match': fr } })
  t.equal(stale.status, 412, 'the translation is gone since the tag was read')
})
