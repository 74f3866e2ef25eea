// Every table's id compares byte by byte (COLLATE "C"), on both databases: ids break the ties of
// every list's order, which must not depend on the database's collation (a PostgreSQL database
// created with en_US.UTF-8 ordered them ignoring case; test/reliability/database-collation.test.ts
// shows the order itself on such a database).
import { sql } from 'drizzle-orm'
import t from 'tap'
import { rowsOf } from '../../src/db/results.js'
import { testDatabase } from '../helpers/db.js'

t.test('every id column is COLLATE "C"', async (t) => {
  const { db } = await testDatabase()
  const result = await db.execute(sql`
    select table_name, collation_name from information_schema.columns
    where table_schema = current_schema() and column_name = 'id' order by table_name`)
  const rows = rowsOf<{ table_name: string; collation_name: string | null }>(result)
  t.ok(rows.length >= 10, `the tables with an id (${rows.map((r) => r.table_name).join(', ')})`)
  for (const row of rows) t.equal(row.collation_name, 'C', `${row.table_name}.id`)
})
