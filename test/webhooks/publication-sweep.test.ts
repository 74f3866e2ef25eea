// The publication sweep (src/jobs/publication-sweep.ts): a scheduled entry fires
// changelog_entry.published once its time has passed, if it is still scheduled for then; once per
// publication, however many sweeps run at once (on PostgreSQL: test/reliability/publication-sweep.test.ts). No test waits for a time to come: the entry's
// time is moved to now (scheduledTimeArrives) and the sweep is run by hand (runOnce).
import t, { type Test } from 'tap'
import { openDatabase } from '../../src/db/client.js'
import { makeRepos, type Repos } from '../../src/db/repos/index.js'
import { publicationSweep } from '../../src/jobs/publication-sweep.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { explainPlan, indexScans, newPgliteDataDir, scheduledTimeArrives, testDatabase } from '../helpers/db.js'
import { logSink, projectEvents, sweepPublications } from '../helpers/events.js'

const future = (ms = 3_600_000) => new Date(Date.now() + ms).toISOString()

async function scheduled(t: Test) {
  const app = await testApp()
  const project = await createProject()
  const entry = async (at = future()) => {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key: project.key, body: { title: 'Soon', status: 'scheduled', published_at: at } })
    t.equal(res.status, 201)
    return res.json.data.id as string
  }
  const request = (method: 'GET' | 'PATCH' | 'DELETE', id: string, body?: Record<string, unknown>) => call(t, app, { method, url: `/v1/changelog/${id}`, key: project.key, body })
  const published = async () => (await projectEvents(project.id, 'changelog_entry.published')).map((event) => event.data.id as string)
  return { app, project, entry, request, published }
}

t.test('a scheduled entry fires once its time has passed, not before, and once', async (t) => {
  const s = await scheduled(t)
  const id = await s.entry()
  await sweepPublications()
  t.same(await s.published(), [], 'not before its time')

  const arrived = await scheduledTimeArrives(id)
  await sweepPublications()
  const [event, ...more] = await projectEvents(s.project.id)
  t.same(more, [])
  t.equal(event!.type, 'changelog_entry.published')
  const now = (await s.request('GET', id)).json.data
  t.same(event!.data, now, 'the GET body at that moment')
  t.match(event!.data, { status: 'published', published_at: arrived })

  await sweepPublications()
  t.equal((await projectEvents(s.project.id)).length, 1, 'the next sweep finds it announced')
})

t.test('an entry moved earlier fires at its new time; one unpublished, rescheduled or deleted before the sweep does not', async (t) => {
  const s = await scheduled(t)
  const earlier = await s.entry(future(7_200_000))
  t.equal((await s.request('PATCH', earlier, { published_at: future(3_600_000) })).status, 200)
  await sweepPublications()
  t.same(await s.published(), [], 'moved earlier, still to come')
  await scheduledTimeArrives(earlier)

  // Each of these had its time pass, then changed before any sweep saw it.
  const unpublished = await s.entry()
  await scheduledTimeArrives(unpublished)
  t.equal((await s.request('PATCH', unpublished, { status: 'draft' })).status, 200)
  const rescheduled = await s.entry()
  await scheduledTimeArrives(rescheduled)
  t.equal((await s.request('PATCH', rescheduled, { status: 'scheduled', published_at: future() })).status, 200)
  const deleted = await s.entry()
  await scheduledTimeArrives(deleted)
  t.equal((await s.request('DELETE', deleted)).status, 204)

  await sweepPublications()
  t.same(await s.published(), [earlier], 'only the entry still scheduled for a time that has passed')
  await scheduledTimeArrives(rescheduled)
  await sweepPublications()
  t.same(await s.published(), [earlier, rescheduled], 'the rescheduled one at its new time')
})

t.test('a sweep announces every due entry, in batches of its size, each with its own event', async (t) => {
  const s = await scheduled(t)
  const ids: string[] = []
  for (let i = 0; i < 7; i++) ids.push(await s.entry())
  for (const id of ids) await scheduledTimeArrives(id)
  const { log } = logSink()
  await publicationSweep({ repos: makeRepos((await testDatabase()).db), log, batch: 3 }).runOnce()
  t.same((await s.published()).sort(), [...ids].sort())
})

t.test("the sweep's claim reads the index of unannounced entries", async (t) => {
  const { db } = await testDatabase()
  const scans = indexScans(await explainPlan(makeRepos(db).changelog.dueClaim(50)))
  t.ok(
    scans.some((scan) => scan.index === 'changelog_entries_unannounced_idx'),
    'changelog_entries_unannounced_idx, not a scan of every entry',
  )
})

t.test('a sweep that fails is logged once per outage and never throws from the timer', async (t) => {
  const real = makeRepos((await testDatabase()).db)
  let down = true
  const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  const repos = { ...real, transaction: (work: (tx: Repos) => Promise<unknown>) => (down ? Promise.reject(outage) : real.transaction(work)) } as Repos
  const { log, lines } = logSink()
  const sweep = publicationSweep({ repos, log })

  await t.rejects(sweep.runOnce(), outage, 'runOnce throws, for tests')
  for (let i = 0; i < 3; i++) await sweep.tick()
  t.same(lines.map((line) => [line.level, line.fields]), [['warn', { code: 'ECONNREFUSED' }]], 'three failed sweeps, one line')
  t.notMatch(JSON.stringify(lines), /select|update|changelog_entries/i, 'no SQL in the log')
  down = false
  await sweep.tick()
  await sweep.tick()
  t.same(lines.map((line) => line.level), ['warn', 'info'], 'one line when it works again')
  down = true
  await sweep.tick()
  t.equal(lines.length, 3, 'the next outage is logged again')
})

t.test('a sweep on a closed database fails quietly', async (t) => {
  const database = await openDatabase({ loadDataDir: await newPgliteDataDir() })
  await database.close()
  const { log, lines } = logSink()
  const sweep = publicationSweep({ repos: makeRepos(database.db), log })
  await sweep.tick()
  await sweep.tick()
  t.equal(lines.length, 1)
  t.equal(lines[0]!.level, 'warn')
})

t.test('start() sweeps at once; stop() waits for the batch in progress and ends the sweep there', async (t) => {
  let entered!: () => void
  const began = new Promise<void>((resolve) => (entered = resolve))
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let batches = 0
  // Every batch comes back full, as if entries kept coming: only stop() ends the sweep.
  const repos = {
    async transaction() {
      batches++
      entered()
      await released
      return 2
    },
  } as unknown as Repos
  const sweep = publicationSweep({ repos, log: logSink().log, intervalMs: 60_000, batch: 2 })
  sweep.start()
  await began
  let stopped = false
  const stopping = sweep.stop().then(() => (stopped = true))
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(stopped, 'still sweeping')
  release()
  await stopping
  t.ok(stopped)
  t.equal(batches, 1, 'no batch after stop()')
})
