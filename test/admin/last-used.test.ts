// last_used_at (contract §9): the time of the key's latest accepted request, noted in memory off
// the request's path and written by flushes, at most once a minute per key. The clock is injected
// and flushes are called by the test (no timer runs them: byHand), so nothing depends on speed.
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { rowsOf } from '../../src/db/results.js'
import { byHand } from '../../src/http/key-usage.js'
import { ADMIN_TOKEN, call, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

/** An app whose clock the test moves, flushing only when told. */
async function clockedApp() {
  const clock = { now: Date.now() }
  const app = await testApp({}, { now: () => clock.now, keyUsage: { schedule: byHand } })
  return { app, clock }
}

async function project(t: Test, app: FastifyInstance, plan = 'pro') {
  const created = await call(t, app, { method: 'POST', url: '/admin/v1/projects', headers: admin, body: { name: 'Usage', plan } })
  const id = created.json.data.id as string
  const keys = async () => (await call(t, app, { url: `/admin/v1/projects/${id}/api-keys`, headers: admin })).json.data as Record<string, string | null>[]
  return { id, key: created.json.api_key as string, keyId: (await keys())[0]!.id!, keys }
}

/** What a minute passing does to the write limit: the key's last write is now a minute old. */
async function aMinuteLater(keyId: string) {
  await (await testDatabase()).db.execute(sql`update api_keys set last_used_written_at = last_used_written_at - interval '61 seconds' where id = ${keyId}`)
}

t.test('an accepted request is written at the next flush, with its own time; a refused one is not', async (t) => {
  const { app, clock } = await clockedApp()
  const p = await project(t, app)
  t.equal((await p.keys())[0]!.last_used_at, null, 'null until the key is used')

  const usedAt = clock.now
  t.equal((await call(t, app, { url: '/v1/changelog', key: p.key })).status, 200)
  clock.now += 5_000
  t.equal((await p.keys())[0]!.last_used_at, null, 'not written on the request path')
  await app.keyUsage.flush()
  t.equal((await p.keys())[0]!.last_used_at, new Date(usedAt).toISOString(), 'the time of the request, written by the flush')

  // A use less than a minute after the stored one is not written, the row's minute over or not:
  // the value is within a minute of it already (contract §9).
  t.equal((await call(t, app, { url: '/v1/changelog', key: p.key })).status, 200)
  await app.keyUsage.flush()
  await aMinuteLater(p.keyId)
  await app.keyUsage.flush()
  t.equal((await p.keys())[0]!.last_used_at, new Date(usedAt).toISOString(), 'a use 5 s after the stored one: not written')

  // A use a minute after the stored one is noted, and written once the row's minute has passed.
  clock.now = usedAt + 60_000
  const later = clock.now
  t.equal((await call(t, app, { url: '/v1/beta/programs', key: p.key })).status, 403, 'a 403 (no beta feature) is an accepted key')
  await app.keyUsage.flush()
  t.equal((await p.keys())[0]!.last_used_at, new Date(later).toISOString(), 'the row written a minute ago: written at once')
  clock.now += 60_000
  const last = clock.now
  t.equal((await call(t, app, { url: '/v1/changelog', key: p.key })).status, 200)
  await app.keyUsage.flush()
  t.equal((await p.keys())[0]!.last_used_at, new Date(later).toISOString(), 'at most once a minute, by the database’s clock')
  await aMinuteLater(p.keyId)
  await app.keyUsage.flush()
  t.equal((await p.keys())[0]!.last_used_at, new Date(last).toISOString(), 'the use kept in memory is written once the minute is over')

  // A request refused 401 is not a use of the key (it would be written: a minute later, the row's minute over).
  await call(t, app, { method: 'DELETE', url: `/admin/v1/projects/${p.id}/api-keys/${p.keyId}`, headers: admin })
  clock.now += 65_000
  t.equal((await call(t, app, { url: '/v1/changelog', key: p.key })).status, 401)
  await aMinuteLater(p.keyId)
  await app.keyUsage.flush()
  t.equal((await p.keys())[0]!.last_used_at, new Date(last).toISOString(), 'a 401 leaves last_used_at alone')
})

t.test('reads that authenticate in their own statement are uses too; unknown keys are not noted', async (t) => {
  const { app, clock } = await clockedApp()
  const p = await project(t, app)
  const entry = await call(t, app, { method: 'POST', url: '/v1/changelog', key: p.key, body: { title: 'x', status: 'published' } })
  await app.keyUsage.flush()
  await aMinuteLater(p.keyId)
  clock.now += 60_000
  // The key has a budget in this window: this read is not looked up, its rows prove the key.
  t.equal((await call(t, app, { url: `/v1/changelog/${entry.json.data.id}`, key: p.key })).status, 200)
  t.equal((await call(t, app, { url: '/v1/changelog', key: `fbk_${'x'.repeat(40)}` })).status, 401)
  await app.keyUsage.flush()
  t.equal((await p.keys())[0]!.last_used_at, new Date(clock.now).toISOString())
})

/** An app of the test's own, which it may close (testApp's are shared, and never closed by a test), on `clock`. */
async function ownApp(clock: { now: number }) {
  const { buildApp } = await import('../../src/app.js')
  const { defaults } = await import('../../src/config.js')
  return buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN, authFailuresPerMinute: 1_000_000 }, await testDatabase(), {
    now: () => clock.now,
    keyUsage: { schedule: byHand },
  })
}

t.test('the uses noted are written when the app closes', async (t) => {
  const clock = { now: Date.now() - 3_000 }
  const app = await ownApp(clock)
  const p = await project(t, app)
  t.equal((await call(t, app, { url: '/v1/changelog', key: p.key })).status, 200)
  await app.close()
  const [row] = ((r) => (Array.isArray(r) ? r : (r as { rows: unknown[] }).rows))(
    await (await testDatabase()).db.execute(sql`select last_used_at from api_keys where id = ${p.keyId}`),
  ) as { last_used_at: string | Date }[]
  t.equal(new Date(row!.last_used_at).toISOString(), new Date(clock.now).toISOString())
})

t.test('a use an app could not write before it closed (its minute not over) is written by the next app', async (t) => {
  // A graceful stop (a deploy) dropped such a use: last_used_at stayed on the use before it,
  // for good (found by an outside review). Two apps of their own, one after the other, as a
  // restart runs them.
  const clock = { now: Date.now() - 10_000 }
  const first = await ownApp(clock)
  const p = await project(t, first)
  const usedAt = clock.now
  t.equal((await call(t, first, { url: '/v1/changelog', key: p.key })).status, 200)
  await first.keyUsage.flush()
  clock.now += 60_000
  const lastUse = clock.now
  t.equal((await call(t, first, { url: '/v1/changelog', key: p.key })).status, 200)
  await first.close()

  const second = await ownApp(clock)
  t.teardown(() => second.close())
  const lastUsed = async () => ((await call(t, second, { url: `/admin/v1/projects/${p.id}/api-keys`, headers: admin })).json.data as { last_used_at: string | null }[])[0]!.last_used_at
  t.equal(await lastUsed(), new Date(usedAt).toISOString(), 'not written as the first closed: at most once a minute')
  await second.keyUsage.flush()
  t.equal(await lastUsed(), new Date(usedAt).toISOString(), 'taken back by the next flush, its minute still not over')
  await aMinuteLater(p.keyId)
  await second.keyUsage.flush()
  t.equal(await lastUsed(), new Date(lastUse).toISOString(), 'written once the minute is over: the time of the last request')
})

t.test("a use the row's minute holds back is reported with when that minute ends, by the database's clock", async (t) => {
  // What the flush schedules its next try by (key-usage.ts): not a fixed interval, which made the
  // value trail by more than a minute (found by an outside review).
  const { app } = await clockedApp()
  const p = await project(t, app)
  const { projects } = makeRepos((await testDatabase()).db)
  const keyHash = rowsOf<{ key_hash: string }>(await (await testDatabase()).db.execute(sql`select key_hash from api_keys where id = ${p.keyId}`))[0]!.key_hash
  const first = await projects.recordKeyUse([{ keyHash, usedAt: new Date(Date.now() - 61_000) }])
  t.same(first, { written: [keyHash], pending: [], notDue: [] }, 'the first use is written')
  const close = await projects.recordKeyUse([{ keyHash, usedAt: new Date(Date.now() - 2_000) }])
  t.same([close.written, close.pending, close.notDue.map((use) => use.keyHash)], [[], [], [keyHash]], 'a use less than a minute after it is neither written nor held, but not due')
  const soonest = close.notDue[0]!.inMs
  t.ok(soonest > 50_000 && soonest <= 60_000, `with when the row's minute ends (${soonest} ms)`)
  const second = await projects.recordKeyUse([{ keyHash, usedAt: new Date() }])
  t.same(second.written, [], 'a use a minute after it, within the row’s minute, is not written')
  t.equal(second.pending.length, 1)
  const { inMs } = second.pending[0]!
  t.ok(inMs > 50_000 && inMs <= 60_000, `held back for the rest of the minute (${inMs} ms)`)
  await aMinuteLater(p.keyId)
  t.same((await projects.recordKeyUse([{ keyHash, usedAt: new Date() }])).written, [keyHash], 'written once that minute is over')
})

t.test('a use too close to the stored one, the row’s minute over, is held until the stored one is a minute old, not a second', async (t) => {
  // Found by a review: it was held at least the second meant for a row another writer holds.
  const { app } = await clockedApp()
  const p = await project(t, app)
  const { db } = await testDatabase()
  const { projects } = makeRepos(db)
  const keyHash = rowsOf<{ key_hash: string }>(await db.execute(sql`select key_hash from api_keys where id = ${p.keyId}`))[0]!.key_hash
  await db.execute(sql`update api_keys set last_used_at = now() - interval '59.7 seconds', last_used_written_at = now() - interval '61 seconds' where id = ${p.keyId}`)
  const stored = rowsOf<{ at: string | Date }>(await db.execute(sql`select last_used_at as at from api_keys where id = ${p.keyId}`))[0]!.at
  // 59 s after the stored use, by the stored use's own clock: not due, however long the statements take.
  const { notDue } = await projects.recordKeyUse([{ keyHash, usedAt: new Date(new Date(stored).getTime() + 59_000) }])
  t.equal(notDue.length, 1)
  t.ok(notDue[0]!.inMs < 1_000, `held ${notDue[0]!.inMs} ms: until the stored use is a minute old`)
})
