// The data half of migration 0005 (body_html): rendering Markdown is JavaScript, so the SQL
// migration only adds the columns, and migrate() then renders every body whose HTML is
// missing: rows written before the columns existed, and rows an instance of the previous
// version wrote during a deploy. It runs under the migration lock (client.ts), so instances
// starting together do not render the same rows twice; even without it, each write below only
// fills an HTML that is still missing, for the body it was rendered from.
import { sql, type SQL } from 'drizzle-orm'
import type { Database } from './client.js'
import { rowsOf } from './results.js'

/** Rows read, rendered and written at a time: at most 100 bodies of 100 000 characters in memory. */
const BATCH_ROWS = 100

/** The body's HTML, or null when it cannot be rendered now (the row keeps waiting for a later start). */
type Render = (source: string) => Promise<string | null>

interface Pending {
  key: string[]
  body: string
  digest: string
}


/**
 * One table's rows without HTML, by a key of `columns`, in order and in batches; `projectOf` names
 * a row's project (as `t`), whose public_changed_at each batch moves. Stops at the
 * first body that cannot be rendered now (no worker could start): the rest wait for a later start.
 */
async function fill(db: Database, table: string, columns: string[], projectOf: SQL, render: Render): Promise<{ filled: number; stopped: boolean }> {
  const keyList = sql.raw(columns.map((c) => `"${c}"`).join(', '))
  let after: string[] | undefined
  let filled = 0
  for (;;) {
    const from = after ? sql`and (${keyList}) > (${sql.join(after.map((v) => sql`${v}`), sql`, `)})` : sql``
    const rows = rowsOf<Record<string, string>>(
      await db.execute(sql`
        select ${keyList}, body, md5(body) as digest from ${sql.identifier(table)}
        where body_html is null ${from}
        order by ${keyList} limit ${BATCH_ROWS}`),
    )
    if (rows.length === 0) return { filled, stopped: false }
    const pending: Pending[] = rows.map((row) => ({ key: columns.map((c) => row[c]!), body: row.body!, digest: row.digest! }))
    const values: ReturnType<typeof sql>[] = []
    let stopped = false
    for (const row of pending) {
      const html = await render(row.body)
      if (html === null) {
        stopped = true
        break
      }
      values.push(sql`(${sql.join([...row.key, row.digest, html].map((v) => sql`${v}`), sql`, `)})`)
    }
    if (values.length > 0) {
      // Only where the HTML is still missing and the body is the one rendered: a row written in
      // the meantime keeps what its writer stored.
      const matches = sql.join(columns.map((c) => sql`t.${sql.identifier(c)} = v.${sql.identifier(c)}`), sql` and `)
      // What the project's pages and feeds show changed with it: their Last-Modified moves.
      await db.execute(sql`
        with filled as (
          update ${sql.identifier(table)} t set body_html = v.html
          from (values ${sql.join(values, sql`, `)}) as v(${keyList}, digest, html)
          where ${matches} and t.body_html is null and md5(t.body) = v.digest
          returning ${projectOf} as project_id
        )
        update projects set public_changed_at = now() where id in (select project_id from filled)`)
      filled += values.length
    }
    if (stopped) return { filled, stopped }
    after = pending.at(-1)!.key
  }
}

/** Renders the bodies of entries and translations that have no HTML yet; returns how many it rendered. */
export async function backfillBodyHtml(db: Database, render: Render): Promise<number> {
  const entries = await fill(db, 'changelog_entries', ['id'], sql`t.project_id`, render)
  if (entries.stopped) return entries.filled
  const ofEntry = sql`(select e.project_id from changelog_entries e where e.id = t.entry_id)`
  return entries.filled + (await fill(db, 'changelog_translations', ['entry_id', 'locale_key'], ofEntry, render)).filled
}
