// changelog_entry.published from the writes (openapi.yaml, webhooks): fired in the write's
// transaction when a POST or PATCH makes an entry visible, once per publication; the sweep's
// part (scheduled entries whose time comes) is in publication-sweep.test.ts.
import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { changelog_entries } from '../../src/db/schema.js'
import { call, createProject, testApp, type TestProject } from '../helpers/app.js'
import { scheduledTimeArrives, testDatabase } from '../helpers/db.js'
import { projectEvents, sweepPublications, type LoggedEvent } from '../helpers/events.js'

const HOUR = 3_600_000
const future = (ms = HOUR) => new Date(Date.now() + ms).toISOString()
const past = (ms = HOUR) => new Date(Date.now() - ms).toISOString()

/** A client of one project's changelog that notes the events each write added. */
async function changelog(t: Test) {
  const app: FastifyInstance = await testApp()
  const project: TestProject = await createProject()
  let seen = 0
  /** The events added since the last call. */
  const added = async (): Promise<LoggedEvent[]> => {
    const all = await projectEvents(project.id)
    const fresh = all.slice(seen)
    seen = all.length
    return fresh
  }
  const get = async (id: string) => (await call(t, app, { url: `/v1/changelog/${id}`, key: project.key })).json.data
  return {
    app,
    project,
    added,
    get,
    async create(body: Record<string, unknown>, status = 201, headers: Record<string, string> = {}) {
      const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key: project.key, body: { title: 'Dark mode', body: 'At last.', ...body }, headers })
      t.equal(res.status, status, `POST ${JSON.stringify(body)} → ${status}`)
      return res
    },
    async patch(id: string, body: Record<string, unknown>, status = 200, headers: Record<string, string> = {}) {
      const res = await call(t, app, { method: 'PATCH', url: `/v1/changelog/${id}`, key: project.key, body, headers })
      t.equal(res.status, status, `PATCH ${JSON.stringify(body)} → ${status}`)
      return res
    },
    /** Asserts that exactly one changelog_entry.published was added, equal to the entry's GET body now. */
    async publishedOnce(id: string, message: string) {
      const events = await added()
      t.same(events.map((e) => e.type), ['changelog_entry.published'], message)
      const now = await get(id)
      t.same(events[0]?.data, now, `${message}: the GET body`)
      t.equal(events[0]?.data.status, 'published')
      return events[0]!
    },
    async none(message: string) {
      t.same(await added(), [], `${message}: no event`)
    },
  }
}

async function announcedAt(id: string): Promise<string | null> {
  const { db } = await testDatabase()
  const [row] = await db.select({ announced_at: changelog_entries.announced_at }).from(changelog_entries).where(eq(changelog_entries.id, id))
  return row!.announced_at?.toISOString() ?? null
}

t.test('an entry published by its POST fires at once, now or back-dated; a draft or a scheduled one does not', async (t) => {
  const c = await changelog(t)
  const now = (await c.create({ status: 'published', labels: ['UI'], version: '2.0.0' })).json.data
  const event = await c.publishedOnce(now.id, 'published now')
  t.same(event.data, now, 'the 201 body')
  t.equal(await announcedAt(now.id), now.published_at, 'announced_at records the publication announced')

  const backDated = (await c.create({ status: 'published', published_at: '2020-05-01T10:00:00.000+02:00' })).json.data
  await c.publishedOnce(backDated.id, 'back-dated')
  t.equal(await announcedAt(backDated.id), '2020-05-01T08:00:00.000Z')

  const draft = (await c.create({})).json.data
  const scheduled = (await c.create({ status: 'scheduled', published_at: future() })).json.data
  await c.none('a draft and a scheduled entry')
  t.equal(await announcedAt(draft.id), null)
  t.equal(await announcedAt(scheduled.id), null)
})

t.test('PATCH fires when it makes the entry visible, and never for an entry already visible', async (t) => {
  const c = await changelog(t)
  const { id } = (await c.create({})).json.data
  await c.none('a draft')
  await c.patch(id, { status: 'published' })
  await c.publishedOnce(id, 'draft → published')
  await c.patch(id, { status: 'published' })
  await c.none('published again')
  await c.patch(id, { title: 'Dark mode, really', body: 'Edited.', labels: ['ui'], version: '2.0.1' })
  await c.none('edited')
  await c.patch(id, { locale: 'fr', title: 'Mode sombre' })
  await c.none('translated')
  await c.patch(id, { published_at: past(2 * HOUR) })
  await c.none('its date moved, still visible')
  await c.patch(id, { status: 'published', published_at: past(3 * HOUR) })
  await c.none('back-dated again, still visible')
  await c.patch(id, { status: 'draft' })
  await c.none('unpublished')
  t.equal(await announcedAt(id), null, 'an entry made a draft is no longer announced')
  await c.patch(id, { status: 'published' })
  await c.publishedOnce(id, 'published again: a new publication fires again')
})

t.test('a scheduled entry moved into the past fires in the PATCH; a visible one moved into the future fires again at its time', async (t) => {
  const c = await changelog(t)
  const { id } = (await c.create({ status: 'scheduled', published_at: future() })).json.data
  await c.patch(id, { published_at: future(2 * HOUR) })
  await c.none('moved later')
  await c.patch(id, { published_at: past() })
  await c.publishedOnce(id, 'its date moved into the past')
  await sweepPublications()
  await c.none('the sweep finds nothing left to announce')

  await c.patch(id, { status: 'scheduled', published_at: future() })
  await c.none('rescheduled')
  t.equal(await announcedAt(id), null, 'no longer announced')
  await scheduledTimeArrives(id)
  await sweepPublications()
  await c.publishedOnce(id, 'at its new time, by the sweep')

  const visible = (await c.create({ status: 'published' })).json.data
  await c.publishedOnce(visible.id, 'published')
  await c.patch(visible.id, { published_at: future() })
  await c.none('moved into the future')
  await c.patch(visible.id, { status: 'published' })
  await c.publishedOnce(visible.id, 'published now again')
})

t.test('the event holds the entry in its base locale, whichever locale the write named', async (t) => {
  const c = await changelog(t)
  const { id } = (await c.create({ locale: 'en' })).json.data
  await c.patch(id, { locale: 'fr', title: 'Mode sombre', body: 'Enfin.' })
  const res = await c.patch(id, { locale: 'fr', title: 'Mode sombre !', status: 'published' })
  t.equal(res.json.data.locale, 'fr', 'the answer is in the locale written')
  const event = await c.publishedOnce(id, 'published through a translation')
  t.match(event.data, { locale: 'en', title: 'Dark mode', body: 'At last.' })
})

t.test('a write that fails or is replayed fires nothing', async (t) => {
  const c = await changelog(t)
  await c.create({ status: 'scheduled' }, 400)
  await c.create({ status: 'published', title: '' }, 400)
  await c.none('refused POSTs')

  const { id } = (await c.create({})).json.data
  const { etag } = (await call(t, c.app, { url: `/v1/changelog/${id}`, key: c.project.key })).headers as { etag: string }
  await c.patch(id, { title: 'Moved on' })
  await c.patch(id, { status: 'published' }, 412, { 'if-match': etag })
  await c.patch('ch_AAAAAAAAAAAAAAAAAAAAA', { status: 'published' }, 404)
  // Refused inside the write's transaction, after the entry was locked: rolled back, event and all.
  await c.patch(id, { locale: 'de', status: 'published' }, 400)
  await c.none('412, 404 and a 400 from inside the transaction')
  t.equal((await c.get(id)).status, 'draft', 'nothing was published')

  const headers = { 'idempotency-key': 'publish-once' }
  const first = (await c.create({ status: 'published' }, 201, headers)).json.data
  await c.publishedOnce(first.id, 'a keyed POST')
  const replay = await c.create({ status: 'published' }, 201, headers)
  t.equal(replay.headers['idempotency-replayed'], 'true')
  await c.none('its replay')
})
