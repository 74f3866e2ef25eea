// Tenant isolation, generated from the spec. Project A makes one of every resource; project B's
// key then calls every /v1 operation whose path holds an id, on A's ids, alone and mixed with B's
// own ids. Each answer must be a 404 that says nothing more than a missing id of the same shape
// would (the bodies are compared byte for byte, request_id aside), A's records must read the same
// afterwards, no list B reads may mention anything of A's, and nothing B reads moves when A makes
// more of every resource (a count or a sum over every project names nothing of A's, and showed
// only there: found by a takeover review). A /v1 path with an id that this matrix cannot exercise
// fails the last test, so a new operation cannot slip past it.
import t, { type Test } from 'tap'
import { routes, type RouteSpec } from '../../generated/routes.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { testerRecord } from '../../src/handlers/beta-testers.js'
import { endpointRecord } from '../../src/handlers/webhooks.js'
import { call, createProject, testApp, type CallResult, type TestProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

type Json = Record<string, unknown>

const TRANSLATION = 'fr'
/** Appears in every text A writes, so a leak shows up in B's reads even without an id. */
const MARKER = `tenant-a-${Math.random().toString(36).slice(2, 10)}`
const B_MARKER = `tenant-b-${Math.random().toString(36).slice(2, 10)}`

/**
 * How to make a resource in a collection (the path before an id parameter) and what to send
 * when writing to one. A collection or a write missing here is reported as not covered.
 */
interface Recipe {
  create?: (tag: string) => Json
  /** For a collection with no create operation in the API: makes one and returns its id. */
  seed?: (tenant: Tenant, ids: Record<string, string>, tag: string) => Promise<string>
  translate?: (tag: string) => Json
}

const COLLECTIONS: Record<string, Recipe> = {
  '/v1/beta/programs': {
    create: (tag) => ({ name: `program ${tag}`, summary: `summary ${tag}`, version: '1.0.0', status: 'active', access_url: 'https://example.com/beta' }),
  },
  '/v1/beta/programs/{program_id}/testers': { create: (tag) => ({ email: `${tag}@example.com` }) },
  // Testers write feedback on the portal; here it is written the way the portal writes it.
  '/v1/beta/programs/{program_id}/feedback': {
    seed: async (tenant, ids, tag) => {
      const repos = makeRepos((await testDatabase()).db)
      const tester = await repos.testers.enroll(tenant.project.id, ids.program_id!, `feedback-${tag}@example.com`, (row) => testerRecord(row, undefined))
      if (tester.outcome !== 'created' && tester.outcome !== 'existing') throw new Error(`cannot enroll a tester: ${tester.outcome}`)
      const row = await repos.feedback.seed({ projectId: tenant.project.id, programId: ids.program_id!, testerId: tester.row.id, body: `feedback ${tag}`, rating: 3 })
      return row.id
    },
  },
  '/v1/changelog': {
    create: (tag) => ({ title: `entry ${tag}`, body: `body ${tag}`, labels: ['isolation'], status: 'published' }),
    translate: (tag) => ({ locale: TRANSLATION, title: `titre ${tag}`, body: `corps ${tag}` }),
  },
  '/v1/webhook-endpoints': { create: (tag) => ({ url: 'https://hooks.example.com/feedback', events: ['*'], description: `endpoint ${tag}` }) },
  // Deliveries and events are written by the server: here, a test delivery and an event, as the outbox writes them.
  '/v1/webhook-endpoints/{endpoint_id}/deliveries': {
    seed: async (tenant, ids) => {
      const repos = makeRepos((await testDatabase()).db)
      const endpoint = await repos.webhooks.get(tenant.project.id, ids.endpoint_id!)
      return (await repos.transaction((tx) => tx.outbox.recordFor(tenant.project.id, ids.endpoint_id!, 'webhook.test', endpointRecord(endpoint!)))).delivery
    },
  },
  '/v1/events': {
    seed: async (tenant) => {
      const repos = makeRepos((await testDatabase()).db)
      const endpointId = tenant.ids.get('/v1/webhook-endpoints')
      const endpoint = endpointId && (await repos.webhooks.get(tenant.project.id, endpointId))
      if (!endpoint) throw new Error('an event carries a record: make the webhook endpoint first')
      return (await repos.transaction((tx) => tx.outbox.record(tenant.project.id, 'webhook.test', endpointRecord(endpoint)))).id
    },
  },
}

/** What B tries to write into A's resources: real changes, so a leak would be visible. */
const WRITES: Partial<Record<RouteSpec['operationId'], Json[]>> = {
  updateBetaProgram: [{ name: 'hijacked', status: 'closed', summary: null }, {}],
  enrollBetaTester: [{ email: `intruder-${B_MARKER}@example.net` }],
  updateBetaTester: [{ status: 'revoked' }, {}],
  updateChangelogEntry: [{ title: 'hijacked', labels: ['pwned'], status: 'draft' }, { locale: TRANSLATION, title: 'piraté' }, {}],
  updateWebhookEndpoint: [{ url: `https://${B_MARKER}.example.net/`, events: ['beta_tester.joined'], description: 'hijacked', enabled: false }, { enabled: true }, {}],
  rotateWebhookEndpointSecret: [{}],
  testWebhookEndpoint: [{}],
  retryWebhookDelivery: [{}],
  deleteBetaProgram: [{}],
  deleteBetaTester: [{}],
  deleteChangelogEntry: [{}],
  deleteWebhookEndpoint: [{}],
}

const idParams = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
const collectionOf = (path: string, param: string) => path.slice(0, path.indexOf(`/{${param}}`))
const fill = (path: string, ids: Record<string, string>) => path.replace(/\{([^}]+)\}/g, (_, name: string) => ids[name]!)

const isolated = routes.filter((r) => r.path.startsWith('/v1/') && idParams(r.path).length > 0)
const ORDER: Record<string, number> = { GET: 0, POST: 1, PATCH: 1, PUT: 1, DELETE: 2 }

function missingLike(id: string): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
  const prefix = id.slice(0, id.indexOf('_') + 1)
  let suffix = ''
  for (let i = prefix.length; i < id.length; i++) suffix += alphabet[Math.floor(Math.random() * alphabet.length)]
  return prefix + suffix
}

/** The body with its request_id taken out, and the headers a client could tell apart. */
function shape(res: CallResult) {
  const requestId = (res.json as Json | undefined)?.request_id
  const raw = typeof requestId === 'string' ? res.raw.split(JSON.stringify(requestId)).join('"<request_id>"') : res.raw
  const headers = Object.keys(res.headers)
    .filter((h) => !['x-request-id', 'date', 'content-length'].includes(h) && !h.startsWith('ratelimit') && !h.startsWith('x-ratelimit'))
    .sort()
    .map((h) => `${h}: ${h === 'content-type' || h === 'www-authenticate' || h === 'allow' ? String(res.headers[h]) : ''}`)
  return { status: res.status, raw, headers }
}

interface Tenant {
  project: TestProject
  /** Ids by collection path, e.g. '/v1/beta/programs' → bp_... */
  ids: Map<string, string>
}

t.test('tenant isolation across every /v1 path with an id', async (t) => {
  const app = await testApp({ rateLimitPerMinute: 1_000_000 })
  const a: Tenant = { project: await createProject({ name: `A ${MARKER}` }), ids: new Map() }
  const b: Tenant = { project: await createProject({ name: `B ${B_MARKER}` }), ids: new Map() }
  const exercised = new Set<string>()
  const uncovered = new Map<string, string>()

  // One of every resource for each tenant, parents first, through the spec's own create operations.
  async function ensure(tt: Test, tenant: Tenant, tag: string, path: string): Promise<boolean> {
    const ids: Record<string, string> = {}
    for (const param of idParams(path)) {
      const collection = collectionOf(path, param)
      if (!tenant.ids.has(collection)) {
        const recipe = COLLECTIONS[collection]
        const create = routes.find((r) => r.method === 'POST' && r.path === collection)
        let id: string
        if (recipe?.seed) {
          id = await recipe.seed(tenant, ids, tag)
        } else {
          if (!recipe?.create || !create) return false
          const res = await call(tt, app, { method: 'POST', url: fill(collection, ids), key: tenant.project.key, body: recipe.create(tag) })
          tt.equal(res.status, 201, `${tag} creates in ${collection}`)
          id = res.json?.data?.id as string
        }
        tenant.ids.set(collection, id)
        if (recipe.translate) {
          const translated = await call(tt, app, { method: 'PATCH', url: `${fill(collection, ids)}/${id}`, key: tenant.project.key, body: recipe.translate(tag) })
          tt.equal(translated.status, 200, `${tag} translates ${id}`)
        }
      }
      ids[param] = tenant.ids.get(collection)!
    }
    return true
  }

  const paramsOf = (tenant: Tenant, path: string) =>
    Object.fromEntries(idParams(path).map((param) => [param, tenant.ids.get(collectionOf(path, param))!]))

  /** GET with the tenant's own key of every /v1 read of what it has: read before and after. */
  async function snapshot(tt: Test, tenant: Tenant): Promise<Map<string, unknown>> {
    const reads = new Map<string, unknown>()
    for (const route of routes.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/') && r.security === 'ApiKey')) {
      const params = idParams(route.path)
      if (params.some((p) => !tenant.ids.has(collectionOf(route.path, p)))) continue
      const url = fill(route.path, paramsOf(tenant, route.path))
      const queries = ['', ...('locale' in ((route.schema.querystring.properties ?? {}) as Json) ? [`?locale=${TRANSLATION}`] : [])]
      for (const query of queries) {
        const res = await call(tt, app, { url: `${url}${query}`, key: tenant.project.key })
        tt.equal(res.status, 200, `${tenant === a ? 'A' : 'B'} reads ${url}${query}`)
        reads.set(`${url}${query}`, res.json)
      }
    }
    return reads
  }

  /** One more of every resource the tenant has, parents' ids its first ones, made as the first were. */
  async function grow(tt: Test, tenant: Tenant, tag: string): Promise<void> {
    for (const collection of tenant.ids.keys()) {
      const recipe = COLLECTIONS[collection]!
      const ids = paramsOf(tenant, collection)
      if (recipe.seed) {
        await recipe.seed(tenant, ids, tag)
        continue
      }
      const res = await call(tt, app, { method: 'POST', url: fill(collection, ids), key: tenant.project.key, body: recipe.create!(tag) })
      tt.equal(res.status, 201, `${tag} creates another in ${collection}`)
    }
  }

  await t.test('each tenant makes one of every resource', async (t) => {
    for (const route of isolated) {
      const ok = (await ensure(t, a, MARKER, route.path)) && (await ensure(t, b, B_MARKER, route.path))
      if (!ok) uncovered.set(`${route.method} ${route.path}`, `no way to create a resource of ${route.path}: add its collection to COLLECTIONS`)
    }
    const entry = a.ids.get('/v1/changelog')
    if (entry) {
      const fr = await call(t, app, { url: `/v1/changelog/${entry}?locale=${TRANSLATION}`, key: a.project.key })
      t.equal(fr.json?.data?.locale, TRANSLATION, "A's entry has a translation")
    }
  })

  const before = await snapshot(t, a)

  await t.test("B's key gets a 404 on A's ids, shaped exactly like a missing id", async (t) => {
    const ordered = [...isolated].sort((x, y) => (ORDER[x.method] ?? 1) - (ORDER[y.method] ?? 1))
    for (const route of ordered) {
      const name = `${route.method} ${route.path}`
      if (uncovered.has(name)) continue
      let bodies: (Json | undefined)[] = [undefined]
      if (route.schema.body) {
        const writes = WRITES[route.operationId]
        if (!writes) {
          uncovered.set(name, `${route.operationId} takes a body: add what B would write to WRITES`)
          continue
        }
        bodies = writes
      }
      const queries = ['', ...('locale' in ((route.schema.querystring.properties ?? {}) as Json) ? [`locale=${TRANSLATION}`] : [])]
      const params = idParams(route.path)
      // Every mix of A's, B's and missing ids in which at least one id is A's.
      let mixes: Record<string, 'a' | 'b' | 'missing'>[] = [{}]
      for (const param of params) mixes = mixes.flatMap((mix) => (['a', 'b', 'missing'] as const).map((owner) => ({ ...mix, [param]: owner })))
      mixes = mixes.filter((mix) => Object.values(mix).includes('a'))

      for (const mix of mixes) {
        const ids: Record<string, string> = {}
        const control: Record<string, string> = {}
        for (const param of params) {
          const collection = collectionOf(route.path, param)
          const own = (mix[param] === 'b' ? b : a).ids.get(collection)!
          ids[param] = mix[param] === 'missing' ? missingLike(own) : own
          control[param] = mix[param] === 'a' ? missingLike(own) : ids[param]!
        }
        for (const query of queries) {
          for (const body of bodies) {
            const label = `${name} ${JSON.stringify(mix)}${query ? `?${query}` : ''}${body ? ` ${JSON.stringify(body)}` : ''}`
            const url = `${fill(route.path, ids)}${query ? `?${query}` : ''}`
            const foreign = await call(t, app, { method: route.method, url, key: b.project.key, body })
            const missing = await call(t, app, { method: route.method, url: `${fill(route.path, control)}${query ? `?${query}` : ''}`, key: b.project.key, body })
            t.equal(foreign.status, 404, `${label}: 404`)
            t.equal(foreign.json?.code, 'not_found', `${label}: not_found`)
            t.same(shape(foreign), shape(missing), `${label}: the same answer as a missing id`)
            t.notOk(foreign.raw.includes(MARKER), `${label}: nothing of A's in the answer`)
          }
        }
      }
      exercised.add(name)
    }
  })

  await t.test("A's resources are unchanged", async (t) => {
    const after = await snapshot(t, a)
    t.same([...after.keys()], [...before.keys()], 'A reads the same resources')
    for (const [url, data] of before) t.same(after.get(url), data, `${url} is unchanged`)
  })

  await t.test("lists read with B's key never mention anything of A's", async (t) => {
    const secretsOfA = [...a.ids.values(), a.project.id, MARKER]
    const tester = before.get(fill('/v1/beta/programs/{program_id}/testers/{id}', paramsOf(a, '/v1/beta/programs/{program_id}/testers/{id}'))) as
      | { data: { token: string } }
      | undefined
    if (tester) secretsOfA.push(tester.data.token)
    const lists = routes.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/') && r.security === 'ApiKey' && (r.schema.response['200'] as Json | undefined)?.properties && ((r.schema.response['200'] as { properties: Json }).properties.data as Json | undefined)?.type === 'array')
    t.ok(lists.length > 0, 'the spec has list operations')
    for (const route of lists) {
      const properties = (route.schema.querystring.properties ?? {}) as Record<string, { enum?: string[] }>
      const queries = ['limit=100']
      for (const [param, schema] of Object.entries(properties)) for (const value of schema.enum ?? []) queries.push(`limit=100&${param}=${value}`)
      if ('locale' in properties) queries.push(`limit=100&locale=${TRANSLATION}`)
      const url = fill(route.path, paramsOf(b, route.path))
      let seenOwn = false
      for (const query of queries) {
        const res = await call(t, app, { url: `${url}?${query}`, key: b.project.key })
        t.equal(res.status, 200, `B lists ${url}?${query}`)
        for (const secret of secretsOfA) t.notOk(res.raw.includes(secret), `B's ${url}?${query} does not mention ${secret}`)
        if ([...b.ids.values()].some((id) => res.raw.includes(id))) seenOwn = true
      }
      t.ok(seenOwn, `B's own records do show in ${route.path}, so the check above is not vacuous`)
    }
  })

  await t.test("nothing B reads moves when A makes more of every resource", async (t) => {
    const beforeB = await snapshot(t, b)
    t.ok(beforeB.size > 0, 'B reads something')
    await grow(t, a, `${MARKER}-more`)
    const afterB = await snapshot(t, b)
    t.same([...afterB.keys()], [...beforeB.keys()], 'B reads the same resources')
    for (const [url, data] of beforeB) t.same(afterB.get(url), data, `${url} reads as it did`)
  })

  await t.test('every /v1 path with an id parameter is covered', async (t) => {
    t.ok(isolated.length > 0, 'the spec has /v1 paths with ids')
    for (const route of isolated) {
      const name = `${route.method} ${route.path}`
      t.ok(exercised.has(name), `${name} is exercised${uncovered.has(name) ? `: ${uncovered.get(name)}` : ''}`)
    }
  })
})
