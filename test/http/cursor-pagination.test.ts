// Keyset pagination (ext): every list gives pagination.next_cursor and takes ?cursor= instead
// of offset. A cursor walk returns exactly the offset walk, keeps its place when rows are added
// in front, and a cursor is refused (400) anywhere but the list and filters it came from.
import t, { type Test } from 'tap'
import { beta_feedback, beta_programs, beta_testers, changelog_entries } from '../../src/db/schema.js'
import { decodeCursor, encodeCursor, MAX_OFFSET, scopeOfCursor } from '../../src/domain/cursor.js'
import { newId } from '../../src/domain/ids.js'
import { newTesterToken } from '../../src/domain/secrets.js'
import { ADMIN_TOKEN, call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'
import { spec } from '../helpers/spec-check.js'

type Page = { json: { data: Array<{ id: string }>; pagination: { limit: number; offset: number; has_more: boolean; next_cursor: string | null } } }
const ids = (res: Page) => res.json.data.map((x) => x.id)
const at = (day: number) => new Date(Date.UTC(2025, 0, day))

/** Follows next_cursor from the first page to the end; the pages' ids and offsets. */
async function walk(t: Test, key: string, url: string, limit: number) {
  const app = await testApp()
  const sep = url.includes('?') ? '&' : '?'
  let res = (await call(t, app, { url: `${url}${sep}limit=${limit}`, key })) as unknown as Page & { status: number }
  const pages = [ids(res)]
  const offsets = [res.json.pagination.offset]
  while (res.json.pagination.next_cursor) {
    t.equal(res.json.pagination.has_more, true, 'a cursor only while there is more')
    res = (await call(t, app, { url: `${url}${sep}limit=${limit}&cursor=${res.json.pagination.next_cursor}`, key })) as never
    t.equal(res.status, 200)
    pages.push(ids(res))
    offsets.push(res.json.pagination.offset)
  }
  t.equal(res.json.pagination.has_more, false, 'the last page says no more')
  return { pages, offsets }
}

/** Seven entries, three of them published at the same instant (ties go by id). */
async function seedChangelog() {
  const { db } = await testDatabase()
  const project = await createProject()
  const days = [1, 2, 2, 2, 3, 4, 5]
  const rows = days.map((day, i) => ({
    id: newId('ch'),
    project_id: project.id,
    title: `Entry ${i}`,
    body: '',
    labels: [],
    version: '1.0.0',
    locale: 'en',
    published_at: at(day),
  }))
  await db.insert(changelog_entries).values(rows)
  return project
}

t.test('a cursor walk of the changelog returns exactly the offset walk, with exact offsets', async (t) => {
  const { key } = await seedChangelog()
  const app = await testApp()
  const all = ids((await call(t, app, { url: '/v1/changelog?limit=100', key })) as never)
  t.equal(all.length, 7)
  const { pages, offsets } = await walk(t, key, '/v1/changelog', 3)
  t.same(pages.flat(), all, 'same rows, same order, no repeats, none missing')
  t.same(pages.map((p) => p.length), [3, 3, 1])
  t.same(offsets, [0, 3, 6], 'pagination.offset counts the rows before each page')
})

t.test('rows published in front of a cursor neither repeat nor shift the walk', async (t) => {
  const { id: projectId, key } = await seedChangelog()
  const app = await testApp()
  const before = ids((await call(t, app, { url: '/v1/changelog?limit=100', key })) as never)
  const first = (await call(t, app, { url: '/v1/changelog?limit=3', key })) as unknown as Page
  const { db } = await testDatabase()
  await db.insert(changelog_entries).values({ id: newId('ch'), project_id: projectId, title: 'Newest', body: '', labels: [], version: '1.0.0', locale: 'en', published_at: at(9) })
  const second = (await call(t, app, { url: `/v1/changelog?limit=3&cursor=${first.json.pagination.next_cursor}`, key })) as unknown as Page
  t.same(ids(second), before.slice(3, 6), 'the next page starts after the row the first ended on')
  const byOffset = (await call(t, app, { url: '/v1/changelog?limit=3&offset=3', key })) as unknown as Page
  t.same(ids(byOffset), before.slice(2, 5), 'offset, by contrast, shifts by the new row')
})

t.test('the locale and the page size may change between pages', async (t) => {
  const { key } = await seedChangelog()
  const app = await testApp()
  const all = ids((await call(t, app, { url: '/v1/changelog?limit=100', key })) as never)
  const first = (await call(t, app, { url: '/v1/changelog?limit=2', key })) as unknown as Page
  const next = (await call(t, app, { url: `/v1/changelog?limit=4&locale=de&cursor=${first.json.pagination.next_cursor}`, key })) as unknown as Page
  t.same(ids(next), all.slice(2, 6))
  t.match(next.json.pagination, { limit: 4, offset: 2, has_more: true, next_cursor: String })
})

t.test('programs and testers page by cursor, filters included', async (t) => {
  const { db } = await testDatabase()
  const { id: projectId, key } = await createProject()
  const statuses = ['draft', 'active', 'active', 'closed', 'active', 'active', 'draft']
  const programs = statuses.map((status, i) => ({
    id: newId('bp'),
    project_id: projectId,
    name: `P${i}`,
    slug: `p${i}`,
    status: status as 'draft' | 'active' | 'closed',
    created_at: at(i < 4 ? 1 : i),
  }))
  await db.insert(beta_programs).values(programs)
  const app = await testApp()
  for (const filter of ['', '?status=active']) {
    const url = `/v1/beta/programs${filter}`
    const all = ids((await call(t, app, { url: `${url}${filter ? '&' : '?'}limit=100`, key })) as never)
    const { pages } = await walk(t, key, url, 2)
    t.same(pages.flat(), all, `programs${filter}`)
  }

  const programId = programs[1]!.id
  const testers = Array.from({ length: 5 }, (_, i) => ({
    id: newId('bt'),
    beta_program_id: programId,
    email: `t${i}@example.com`,
    token: newTesterToken(),
    invited_at: at(i % 2 === 0 ? 1 : 2 + i),
  }))
  await db.insert(beta_testers).values(testers)
  const url = `/v1/beta/programs/${programId}/testers`
  const all = ids((await call(t, app, { url: `${url}?limit=100`, key })) as never)
  t.equal(all.length, 5)
  const { pages } = await walk(t, key, url, 2)
  t.same(pages.flat(), all, 'testers')
})

t.test('a cursor is refused anywhere but its own list and filters, or with offset', async (t) => {
  const { key } = await seedChangelog()
  const app = await testApp()
  const res = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'A' } })
  const programA = res.json.data.id as string
  const programB = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'B' } })).json.data.id as string
  await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'C' } })
  for (const email of ['a@example.com', 'b@example.com']) {
    await call(t, app, { method: 'POST', url: `/v1/beta/programs/${programA}/testers`, key, body: { email } })
  }

  const changelogCursor = ((await call(t, app, { url: '/v1/changelog?limit=1', key })) as unknown as Page).json.pagination.next_cursor!
  const programsCursor = ((await call(t, app, { url: '/v1/beta/programs?limit=1', key })) as unknown as Page).json.pagination.next_cursor!
  const testersCursor = ((await call(t, app, { url: `/v1/beta/programs/${programA}/testers?limit=1`, key })) as unknown as Page).json.pagination.next_cursor!
  t.type(testersCursor, 'string')

  const changelogScope = scopeOfCursor(changelogCursor)!
  const position = decodeCursor(changelogScope, changelogCursor)!
  const refused: Array<[string, string]> = [
    [`/v1/changelog?cursor=${changelogCursor}&offset=0`, '/offset'],
    [`/v1/changelog?cursor=${programsCursor}`, '/cursor'],
    [`/v1/beta/programs?cursor=${changelogCursor}`, '/cursor'],
    [`/v1/beta/programs?status=active&cursor=${programsCursor}`, '/cursor'],
    [`/v1/beta/programs/${programB}/testers?cursor=${testersCursor}`, '/cursor'],
    [`/v1/beta/programs/${programA}/testers?status=invited&cursor=${testersCursor}`, '/cursor'],
    [`/v1/changelog?cursor=${changelogCursor.slice(0, -2)}`, '/cursor'],
    [`/v1/changelog?cursor=${encodeCursor(changelogScope, { ...position, offset: -1 })}`, '/cursor'],
    // A cursor from before cursors named their owner: the list alone no longer makes one.
    [`/v1/changelog?cursor=${encodeCursor('changelog', position)}`, '/cursor'],
    [`/v1/changelog?cursor=${encodeCursor('programs:*', position)}`, '/cursor'],
    [`/v1/changelog?cursor=${Buffer.from('[1,"changelog",0,"x",0]').toString('base64url')}`, '/cursor'],
    ['/v1/changelog?cursor=bm90IGpzb24', '/cursor'],
    ['/v1/changelog?cursor=', '/cursor'],
    ['/v1/changelog?cursor=a+b', '/cursor'],
  ]
  for (const [url, path] of refused) {
    const bad = await call(t, app, { url, key })
    t.equal(bad.status, 400, url)
    t.equal(bad.json.code, 'validation_failed', url)
    t.match(bad.json.errors, [{ in: 'query', path }], url)
  }
})

t.test("one project's cursor is a 400 in another's list; another key of the same project goes on with it", async (t) => {
  // Found by an outside review: a cursor named its list and filters, not its project, and another
  // project's list took it (200, at the other project's position and offset).
  const owner = await seedChangelog()
  const other = await createProject({ beta: true })
  const app = await testApp()
  for (const name of ['A', 'B', 'C']) {
    t.equal((await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: owner.key, body: { name } })).status, 201)
    t.equal((await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: other.key, body: { name } })).status, 201)
  }
  for (const title of ['One', 'Two']) {
    t.equal((await call(t, app, { method: 'POST', url: '/v1/changelog', key: owner.key, body: { title, status: 'published' } })).status, 201, 'an event each')
  }
  const issued = await call(t, app, { method: 'POST', url: `/admin/v1/projects/${owner.id}/api-keys`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const rotated = issued.json.api_key as string
  for (const list of ['/v1/changelog', '/v1/beta/programs', '/v1/events']) {
    const first = (await call(t, app, { url: `${list}?limit=1`, key: owner.key })) as unknown as Page
    const cursor = first.json.pagination.next_cursor
    t.type(cursor, 'string', list)
    const lifted = await call(t, app, { url: `${list}?cursor=${cursor}`, key: other.key })
    t.same([lifted.status, lifted.json.errors?.[0]?.path], [400, '/cursor'], `${list}: another project's cursor`)
    const own = await call(t, app, { url: `${list}?cursor=${cursor}`, key: owner.key })
    const again = await call(t, app, { url: `${list}?cursor=${cursor}`, key: rotated })
    t.equal(again.status, 200, `${list}: another key of the project`)
    t.same(again.json.data, own.json.data, `${list}: the same page`)
    t.equal(again.json.pagination.offset, own.json.pagination.offset)
  }
  const cursor = (await call(t, app, { url: '/v1/changelog?limit=1', key: owner.key })).json.pagination.next_cursor
  const unknown = await call(t, app, { url: `/v1/changelog?cursor=${cursor}`, key: `fbk_${'x'.repeat(40)}` })
  t.equal(unknown.status, 401, 'an unknown key is a 401 before its cursor is a 400')
})

// Year 1000 is the earliest an input may name, 9999 the latest; a page ending on either makes a
// next_cursor like any other.
const EDGES = [new Date('1000-01-01T00:00:00.000Z'), new Date('1000-01-01T00:00:00.001Z'), new Date('1899-12-31T23:59:59.999Z'), new Date('9999-12-31T23:59:59.999Z'), at(1)]

t.test('every next_cursor is accepted back, whatever the dates on its page', async (t) => {
  const { db } = await testDatabase()
  const { id: projectId, key } = await createProject()
  const app = await testApp()

  // The changelog orders by a time the client sets: entries back-dated through the API.
  for (const published_at of ['1000-01-01T00:00:00Z', '1000-01-01T00:00:00.001Z', '1899-12-31T23:59:59.999Z', '2025-01-01T00:00:00Z']) {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: published_at, status: 'published', published_at } })
    t.equal(res.status, 201, published_at)
  }
  const changelog = await walk(t, key, '/v1/changelog', 1)
  t.equal(changelog.pages.flat().length, 4, 'the changelog walks to its oldest entry')

  // The other lists order by times the server sets; rows dated at the edges by hand all the same.
  const programs = EDGES.map((created_at, i) => ({ id: newId('bp'), project_id: projectId, name: `P${i}`, slug: `p${i}`, created_at }))
  await db.insert(beta_programs).values(programs)
  t.equal((await walk(t, key, '/v1/beta/programs', 1)).pages.flat().length, EDGES.length)

  const programId = programs[0]!.id
  const testers = EDGES.map((invited_at, i) => ({ id: newId('bt'), beta_program_id: programId, email: `t${i}@example.com`, token: newTesterToken(), invited_at }))
  await db.insert(beta_testers).values(testers)
  t.equal((await walk(t, key, `/v1/beta/programs/${programId}/testers`, 1)).pages.flat().length, EDGES.length)

  const feedback = EDGES.map((created_at, i) => ({ id: newId('fb'), project_id: projectId, beta_program_id: programId, beta_tester_id: testers[i]!.id, body: 'ok', created_at }))
  await db.insert(beta_feedback).values(feedback)
  t.equal((await walk(t, key, `/v1/beta/programs/${programId}/feedback`, 1)).pages.flat().length, EDGES.length)
})

t.test('a cursor whose values are out of bounds is refused, never echoed', async (t) => {
  t.equal(MAX_OFFSET, spec.components.schemas.Pagination.properties.offset.maximum, "the cursor's bound is the spec's")
  const { key } = await seedChangelog()
  const app = await testApp()
  const first = (await call(t, app, { url: '/v1/changelog?limit=1', key })) as unknown as Page
  const scope = scopeOfCursor(first.json.pagination.next_cursor!)!
  const position = decodeCursor(scope, first.json.pagination.next_cursor!)!

  // The most a cursor may hold: its page ends exactly at the bound, and so does its next_cursor.
  const edge = (await call(t, app, { url: `/v1/changelog?limit=2&cursor=${encodeCursor(scope, { ...position, offset: MAX_OFFSET - 2 })}`, key })) as unknown as Page & { status: number }
  t.equal(edge.status, 200)
  t.equal(edge.json.pagination.offset, MAX_OFFSET - 2)
  t.equal(decodeCursor(scope, edge.json.pagination.next_cursor!)?.offset, MAX_OFFSET)

  for (const [offset, limit] of [[MAX_OFFSET - 1, 2], [MAX_OFFSET, 1], [MAX_OFFSET + 1, 1], [Number.MAX_SAFE_INTEGER, 1]] as const) {
    const url = `/v1/changelog?limit=${limit}&cursor=${encodeCursor(scope, { ...position, offset })}`
    const res = await call(t, app, { url, key })
    t.equal(res.status, 400, `offset ${offset}, limit ${limit}`)
    t.match(res.json.errors, [{ in: 'query', path: '/cursor' }])
  }
  // The year 0000 is refused too: the database has no year 0, and its query failed (a 500).
  const atTime = (time: string) => `/v1/changelog?cursor=${encodeCursor(scope, { ...position, at: new Date(time) })}`
  for (const time of ['-000001-12-31T23:59:59.999Z', '0000-01-01T00:00:00.000Z', '0000-12-31T23:59:59.999Z', '+010000-01-01T00:00:00.000Z']) {
    const res = await call(t, app, { url: atTime(time), key })
    t.equal(res.status, 400, time)
    t.match(res.json.errors, [{ in: 'query', path: '/cursor' }])
  }
  for (const time of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
    t.equal((await call(t, app, { url: atTime(time), key })).status, 200, `${time}: the bounds themselves are read`)
  }
})
