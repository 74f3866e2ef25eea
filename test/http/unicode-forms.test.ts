// An email or a label written with a combining accent and the same one written composed are one
// (Unicode's NFC): `jörg@` enrolled twice, once each way, made two testers, and `é` twice one
// entry's two labels (found by a contract review). Rows written before are brought to NFC by
// migration 0021, which leaves an email alone where its NFC form is already taken.
import { readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { rowsOf } from '../../src/db/results.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const COMPOSED = 'j\u00f6rg@example.com'
const DECOMPOSED = 'jo\u0308rg@example.com'

t.test('an email enrolled composed and then decomposed is one tester, stored composed', async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const program = (await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Forms', status: 'active' } })).json.data.id as string
  const first = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program}/testers`, key, body: { email: DECOMPOSED } })
  t.equal(first.status, 201)
  t.equal(first.json.data.email, COMPOSED, 'stored in NFC')
  const second = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${program}/testers`, key, body: { email: ` ${COMPOSED.toUpperCase()} ` } })
  t.equal(second.status, 200, 'the same tester')
  t.equal(second.json.data.id, first.json.data.id)
})

t.test("a label written composed and decomposed is one label, and either finds the entry", async (t) => {
  const app = await testApp()
  const { key } = await createProject()
  const created = await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title: 'Café', status: 'published', labels: ['Caf\u00e9', 'cafe\u0301', 'CAFE\u0301'] } })
  t.equal(created.status, 201)
  t.same(created.json.data.labels, ['caf\u00e9'], 'one label, in NFC')
  for (const label of ['caf\u00e9', 'cafe\u0301']) {
    const page = await call(t, app, { url: `/v1/changelog?label=${encodeURIComponent(label)}`, key })
    t.same(page.json.data.map((e: { id: string }) => e.id), [created.json.data.id], `?label=${JSON.stringify(label)}`)
  }
})

t.test('migration 0021 brings stored emails and labels to NFC, and leaves an email whose NFC form is taken', async (t) => {
  const { db } = await testDatabase()
  const { id: projectId } = await createProject()
  const suffix = Math.random().toString(36).slice(2, 8)
  const program = `bp_nfc${suffix}${'P'.repeat(15 - suffix.length)}`
  await db.execute(sql`insert into beta_programs (id, project_id, name, slug) values (${program}, ${projectId}, 'NFC', ${`nfc-${suffix}`})`)
  // As enrollment stored them before: a decomposed address alone, and one beside its composed form.
  const testers = {
    alone: ['bt_nfcalone', `ana\u0308-${suffix}@example.com`],
    twin: ['bt_nfctwin', `jo\u0308rg-${suffix}@example.com`],
    composed: ['bt_nfccomposed', `j\u00f6rg-${suffix}@example.com`],
  }
  for (const [id, email] of Object.values(testers)) {
    await db.execute(sql`insert into beta_testers (id, beta_program_id, email, token) values (${`${id}${suffix}`.padEnd(24, 'X')}, ${program}, ${email}, ${`tok-${id}-${suffix}`})`)
  }
  const entry = `ch_nfc${suffix}`.padEnd(24, 'E')
  await db.execute(sql`insert into changelog_entries (id, project_id, title, labels) values (${entry}, ${projectId}, 'Old', ${sql.raw(`ARRAY['b', 'cafe\u0301', 'caf\u00e9', 'a']::text[]`)})`)

  const migration = readFileSync(new URL('../../drizzle/0021_emails_labels_nfc.sql', import.meta.url), 'utf8')
  for (const statement of migration.split('--> statement-breakpoint')) await db.execute(sql.raw(statement))

  const emails = rowsOf<{ email: string }>(await db.execute(sql`select email from beta_testers where beta_program_id = ${program} order by email`)).map((r) => r.email)
  t.same(emails.sort(), [`ana\u0308-${suffix}@example.com`.normalize('NFC'), `j\u00f6rg-${suffix}@example.com`, `jo\u0308rg-${suffix}@example.com`].sort(), 'the lone one in NFC; the twin left beside its composed form')
  const [labels] = rowsOf<{ labels: string[] }>(await db.execute(sql`select labels from changelog_entries where id = ${entry}`))
  t.same(labels?.labels, ['b', 'caf\u00e9', 'a'], 'labels in NFC, the duplicate dropped, in first-seen order')
})

t.test('a cursor issued before migration 0021 for a label typed decomposed is accepted back', async (t) => {
  // Contract §11: every next_cursor the server returned is accepted back. Before 0021 the label in
  // a cursor was kept as typed, and such a cursor became a 400 after the upgrade (found by a review).
  const app = await testApp()
  const { key } = await createProject()
  const ids: string[] = []
  for (const title of ['One', 'Two', 'Three']) {
    ids.push((await call(t, app, { method: 'POST', url: '/v1/changelog', key, body: { title, status: 'published', labels: ['caf\u00e9'] } })).json.data.id)
  }
  const first = await call(t, app, { url: `/v1/changelog?limit=1&label=${encodeURIComponent('cafe\u0301')}`, key })
  t.same(first.json.data.map((e: { id: string }) => e.id), [ids[2]])
  // The same cursor as a server before 0021 issued it: its scope holds the label as typed.
  const value = JSON.parse(Buffer.from(first.json.pagination.next_cursor, 'base64url').toString('utf8')) as unknown[]
  t.match(value[1], /"caf\u00e9"/, 'issued now, the scope holds the label in NFC')
  value[1] = (value[1] as string).replace('caf\u00e9', 'cafe\u0301')
  const old = Buffer.from(JSON.stringify(value)).toString('base64url')
  for (const query of [`cursor=${old}&limit=1`, `cursor=${old}&limit=1&label=${encodeURIComponent('cafe\u0301')}`, `cursor=${old}&limit=1&label=caf%C3%A9`]) {
    const next = await call(t, app, { url: `/v1/changelog?${query}`, key })
    t.equal(next.status, 200, query)
    t.same(next.json.data.map((e: { id: string }) => e.id), [ids[1]], 'the next entry with that label')
  }
  const tampered = Buffer.from(JSON.stringify([...value.slice(0, 1), (value[1] as string).replace('cafe\u0301', 'other'), ...value.slice(2)])).toString('base64url')
  t.equal((await call(t, app, { url: `/v1/changelog?cursor=${tampered}&limit=1&label=caf%C3%A9`, key })).status, 400, "a cursor of another label is still refused for this label's list")
})
