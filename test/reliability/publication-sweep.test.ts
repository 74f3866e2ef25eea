// The publication sweep on PostgreSQL itself: sweeps on several connections at once (several
// instances) announce each publication once. PGlite runs one statement at a time, so its sweeps
// can never overlap; the sweep's other rules are in test/webhooks/publication-sweep.test.ts.
import { eq, inArray, sql } from 'drizzle-orm'
import t from 'tap'
import { openDatabase } from '../../src/db/client.js'
import { makeRepos, type Repos } from '../../src/db/repos/index.js'
import { changelog_entries, events } from '../../src/db/schema.js'
import { publicationSweep } from '../../src/jobs/publication-sweep.js'
import { postgresTestUrl } from '../helpers/db.js'
import { logSink } from '../helpers/events.js'

t.test('sweeps on several connections at once announce each publication once (PostgreSQL)', async (t) => {
  const database = await openDatabase({ databaseUrl: await postgresTestUrl(), poolSize: 8 })
  t.teardown(() => database.close())
  await database.migrate()
  const repos: Repos = makeRepos(database.db)
  const { project } = await repos.projects.create({ name: 'Sweeps', plan: 'pro', beta_enabled: false })
  const { log, lines } = logSink()

  for (let round = 0; round < 5; round++) {
    const ids: string[] = []
    for (let i = 0; i < 20; i++) {
      const { entry } = await repos.changelog.create(project.id, {
        title: `Round ${round} entry ${i}`,
        body: '',
        body_html: '',
        labels: [],
        version: null,
        locale: 'en',
        published_at: new Date(Date.now() + 3_600_000),
      })
      ids.push(entry.id)
    }
    await database.db
      .update(changelog_entries)
      .set({ published_at: sql`date_trunc('milliseconds', now())` })
      .where(inArray(changelog_entries.id, ids))
    const sweeps = Array.from({ length: 4 }, () => publicationSweep({ repos, log, batch: 3 }))
    await Promise.all(sweeps.map((sweep) => sweep.runOnce()))
    const fired = await database.db.select({ data: events.data }).from(events).where(eq(events.project_id, project.id))
    const counts = new Map<string, number>()
    for (const { data } of fired) counts.set(JSON.parse(data).id, (counts.get(JSON.parse(data).id) ?? 0) + 1)
    t.same(
      ids.filter((id) => counts.get(id) !== 1),
      [],
      `round ${round}: every entry announced exactly once`,
    )
  }
  t.same(lines, [], 'and nothing went wrong')
})
