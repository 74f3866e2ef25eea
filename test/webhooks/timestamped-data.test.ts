// An enrollment's event is written by the statement that inserts the tester (db/repos/outbox.ts,
// timestampedData): the record comes from the GET's mapper, and only invited_at, which the
// statement sets, is formatted by SQL. That format must be Date#toISOString's, to the character.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { timestampedData, timestampedDataSql } from '../../src/db/repos/outbox.js'
import { testDatabase } from '../helpers/db.js'

t.test('SQL writes a timestamp as toISOString does, whatever the session time zone', async (t) => {
  const { db } = await testDatabase()
  const dates = ['2026-01-02T03:04:05.006Z', '2026-12-31T23:59:59.999Z', '2026-07-01T00:00:00.000Z', '1000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.990Z']
  await db.transaction(async (tx) => {
    await tx.execute(sql`set local time zone 'Asia/Kathmandu'`)
    for (const iso of dates) {
      const record = (at: Date) => ({ before: 'x"y', at: at.toISOString(), after: 1 })
      const statement = tx.select({ data: timestampedDataSql(sql`${iso}::timestamptz`) }).from(sql`(select 1) one`)
      const [row] = await statement.prepare(`timestamped_${iso.slice(0, 4)}`).execute(timestampedData(record))
      t.same(JSON.parse(row!.data), record(new Date(iso)), iso)
    }
  })
})

t.test('the record must hold the stand-in timestamp exactly once', async (t) => {
  t.throws(() => timestampedData(() => ({ at: 'not a date' })), /exactly once/)
  t.throws(() => timestampedData((at) => ({ a: at.toISOString(), b: at.toISOString() })), /exactly once/)
  t.same(timestampedData((at) => ({ id: 'bt_1', at: at.toISOString() })), { dataBefore: '{"id":"bt_1","at":', dataAfter: '}' })
})
