// Two server instances on one PostgreSQL database (two pools, two apps), as in production behind
// a load balancer. Fails, never skips, without PostgreSQL (see fixtures/pg.ts for when it runs): a key expired
// or revoked through one instance is refused by the other on its very next request, and
// last_used_at is written at most once a minute per key whichever instance writes, and stays
// the time of a real request. Clocks are injected and flushes called by the test.
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase, type DbHandle } from '../../src/db/client.js'
import { byHand } from '../../src/http/key-usage.js'
import { ADMIN_TOKEN, call } from '../helpers/app.js'
import { postgresTestUrl } from '../helpers/db.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const url = await postgresTestUrl()
const clock = { now: Date.now() }

async function instance(t: Test): Promise<{ app: FastifyInstance; handle: DbHandle }> {
  const handle = await openDatabase({ databaseUrl: url, poolSize: 2 })
  await handle.migrate()
  const app = await buildApp({ ...defaults, logLevel: 'silent', databaseUrl: url, adminToken: ADMIN_TOKEN, authFailuresPerMinute: 1_000_000 }, handle, {
    now: () => clock.now,
    keyUsage: { schedule: byHand },
  })
  await app.ready()
  t.teardown(async () => {
    await app.close()
    await handle.close()
  })
  return { app, handle }
}

const rows = (result: unknown) => (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, unknown>[]

t.test('two instances on one PostgreSQL database', async (t) => {
  const a = await instance(t)
  const b = await instance(t)
  t.equal(a.handle.kind, 'postgres')
  const created = await call(t, a.app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Two instances', plan: 'pro' } })
  const projectId = created.json.data.id as string
  const keysOn = async (i: { app: FastifyInstance }) => (await call(t, i.app, { url: `/admin/v1/projects/${projectId}/api-keys`, headers: admin })).json.data as Record<string, string | null>[]
  const issue = async (body: object) => (await call(t, a.app, { method: 'POST', url: `/admin/v1/projects/${projectId}/api-keys`, headers: admin, body })).json
  const keyRow = async (id: string) => rows(await a.handle.db.execute(sql`select last_used_at, last_used_written_at from api_keys where id = ${id}`))[0]!

  await t.test('a key revoked through A is 401 on B at once, on a read and on a write', async (t) => {
    const issued = await issue({ name: 'to revoke' })
    const entry = await call(t, b.app, { method: 'POST', url: '/v1/changelog', key: issued.api_key, body: { title: 'x', status: 'published' } })
    t.equal(entry.status, 201)
    t.equal((await call(t, b.app, { url: `/v1/changelog/${entry.json.data.id}`, key: issued.api_key })).status, 200)
    t.equal((await call(t, a.app, { method: 'DELETE', url: `/admin/v1/projects/${projectId}/api-keys/${issued.data.id}`, headers: admin })).status, 204)
    t.equal((await call(t, b.app, { url: `/v1/changelog/${entry.json.data.id}`, key: issued.api_key })).status, 401, 'a key-scoped read')
    t.equal((await call(t, b.app, { method: 'POST', url: '/v1/changelog', key: issued.api_key, body: { title: 'y' } })).status, 401, 'a write')
  })

  await t.test('a key expired through A is 401 on B at once, on a read and on a write', async (t) => {
    const issued = await issue({ name: 'to expire', expires_at: '2099-01-01T00:00:00Z' })
    const entry = await call(t, b.app, { method: 'POST', url: '/v1/changelog', key: issued.api_key, body: { title: 'x', status: 'published' } })
    t.equal((await call(t, b.app, { url: `/v1/changelog/${entry.json.data.id}`, key: issued.api_key })).status, 200)
    // Its expiry comes (time passing, done through A's pool): B learns it from the database alone.
    await a.handle.db.execute(sql`update api_keys set expires_at = now() - interval '1 millisecond' where id = ${issued.data.id}`)
    t.equal((await call(t, b.app, { url: `/v1/changelog/${entry.json.data.id}`, key: issued.api_key })).status, 401, 'a key-scoped read')
    t.equal((await call(t, b.app, { method: 'POST', url: '/v1/changelog', key: issued.api_key, body: { title: 'y' } })).status, 401, 'a write')
    t.equal((await call(t, b.app, { url: '/v1/changelog?limit=0', key: issued.api_key })).status, 401, 'an answer without rows')
  })

  await t.test('last_used_at: written at most once a minute per key by both instances, always a real request time', async (t) => {
    const issued = await issue({ name: 'busy' })
    const key = issued.api_key as string
    const keyId = issued.data.id as string
    const lastUsed = async () => (await keysOn(b)).find((k) => k.id === keyId)!.last_used_at
    const aMinuteLater = () => a.handle.db.execute(sql`update api_keys set last_used_written_at = last_used_written_at - interval '61 seconds' where id = ${keyId}`)

    const t0 = clock.now
    t.equal((await call(t, a.app, { url: '/v1/changelog', key })).status, 200)
    clock.now += 5_000
    t.equal((await call(t, b.app, { url: '/v1/changelog', key })).status, 200)
    // Both flush at the same moment: one writes, the other skips the row (written this minute).
    await Promise.all([a.app.keyUsage.flush(), b.app.keyUsage.flush()])
    const first = await keyRow(keyId)
    t.ok([t0, t0 + 5_000].includes(new Date(first.last_used_at as string).getTime()), 'one of the two uses')
    const written = new Date(first.last_used_written_at as string).getTime()

    // A use less than a minute after the stored one is not written by either (the value is
    // within a minute of it already); one a minute after it is, once the row's minute is over.
    await aMinuteLater()
    await Promise.all([a.app.keyUsage.flush(), b.app.keyUsage.flush()])
    const aged = await keyRow(keyId)
    t.same([String(aged.last_used_at), new Date(aged.last_used_written_at as string).getTime()], [String(first.last_used_at), written - 61_000], 'the other use, 5 s from the stored one: not written')
    clock.now = t0 + 70_000
    t.equal((await call(t, a.app, { url: '/v1/changelog', key })).status, 200)
    await Promise.all([a.app.keyUsage.flush(), b.app.keyUsage.flush()])
    t.equal(await lastUsed(), new Date(t0 + 70_000).toISOString(), 'a use a minute later: written, the row\'s minute being over')
    const rewritten = new Date((await keyRow(keyId)).last_used_written_at as string).getTime()

    // Within the row's minute, nothing more is written, whichever instance flushes.
    clock.now = t0 + 140_000
    t.equal((await call(t, b.app, { url: '/v1/changelog', key })).status, 200)
    await a.app.keyUsage.flush()
    await b.app.keyUsage.flush()
    t.equal(new Date((await keyRow(keyId)).last_used_written_at as string).getTime(), rewritten, 'no second write within the minute')
    t.equal(await lastUsed(), new Date(t0 + 70_000).toISOString())

    // Once it is over, the latest use, kept in memory on the instance that saw it, is written once.
    await aMinuteLater()
    await Promise.all([a.app.keyUsage.flush(), b.app.keyUsage.flush()])
    t.equal(await lastUsed(), new Date(t0 + 140_000).toISOString(), 'the time of the latest request')

    // Nothing newer to write: a minute later, flushes write nothing at all.
    const settled = await keyRow(keyId)
    await aMinuteLater()
    const before = (await keyRow(keyId)).last_used_written_at
    await Promise.all([a.app.keyUsage.flush(), b.app.keyUsage.flush()])
    t.equal(String((await keyRow(keyId)).last_used_written_at), String(before), 'no write without a newer use')
    t.equal(String((await keyRow(keyId)).last_used_at), String(settled.last_used_at))
  })
})
