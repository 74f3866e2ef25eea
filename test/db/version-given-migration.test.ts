// Migration 0008 (changelog_version_given): a stored '1.0.0' was the default written for every
// entry created without a version, so it becomes "not given"; every other version stays. The
// database is a fresh in-memory PGlite brought to the migration before it, in both test passes
// (the migration is plain SQL, the same on PostgreSQL, where every test run applies it).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import t from 'tap'
import { migrationsFolder } from '../../src/paths.js'
import { newPgliteDataDir } from '../helpers/db.js'

const TAG = '0008_changelog_version_given'

/** A copy of drizzle/ that ends just before `tag`. */
function migrationsBefore(tag: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'migrations-'))
  cpSync(migrationsFolder, dir, { recursive: true })
  const journalPath = join(dir, 'meta', '_journal.json')
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { idx: number; tag: string }[] }
  const index = journal.entries.findIndex((entry) => entry.tag === tag)
  if (index < 0) throw new Error(`no migration ${tag}`)
  journal.entries = journal.entries.slice(0, index)
  writeFileSync(journalPath, JSON.stringify(journal))
  return dir
}

t.test('a stored 1.0.0 becomes "not given", other versions stay, and new rows may have none', async (t) => {
  const before = migrationsBefore(TAG)
  const client = new PGlite({ loadDataDir: await newPgliteDataDir() })
  t.teardown(async () => {
    await client.close()
    rmSync(before, { recursive: true, force: true })
  })
  const db = drizzle(client)
  await migrate(db, { migrationsFolder: before })
  await client.exec(`
    insert into projects (id, name, plan, beta_enabled) values ('prj_000000000000000000001', 'P', 'pro', true);
    insert into changelog_entries (id, project_id, title, version, updated_at)
      values ('ch_000000000000000000001', 'prj_000000000000000000001', 'Defaulted', default, '2025-01-01T00:00:00Z'),
             ('ch_000000000000000000002', 'prj_000000000000000000001', 'Given', '2.1.0', '2025-01-01T00:00:00Z');
  `)

  await migrate(db, { migrationsFolder })
  const rows = (await client.query<{ id: string; version: string | null; updated_at: Date }>('select id, version, updated_at from changelog_entries order by id')).rows
  t.strictSame(rows.map((row) => [row.id, row.version]), [
    ['ch_000000000000000000001', null],
    ['ch_000000000000000000002', '2.1.0'],
  ])
  t.ok(rows.every((row) => row.updated_at.toISOString() === '2025-01-01T00:00:00.000Z'), 'updated_at untouched: the API reads the same record')
  await client.exec(`insert into changelog_entries (id, project_id, title) values ('ch_000000000000000000003', 'prj_000000000000000000001', 'New')`)
  const [fresh] = (await client.query<{ version: string | null }>(`select version from changelog_entries where id = 'ch_000000000000000000003'`)).rows
  t.equal(fresh!.version, null, 'no default in the table: the API owns it')
})
