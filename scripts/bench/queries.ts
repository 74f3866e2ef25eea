// The SQL that the floor and ceiling runs send: taken from the repository's own query builder
// where it is exported, so pgbench and the minimal server run the very statements the API does.
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import type { Database } from '../../src/db/client.js'
import { changelogRepo } from '../../src/db/repos/changelog.js'
import * as schema from '../../src/db/schema.js'

export interface BenchSql {
  /** $1 project id, $2 entry id: the API's GET /v1/changelog/{id} without a locale. */
  getEntry: string
  /** $1 project id, $2 limit + 1: the API's GET /v1/changelog page at offset 0. */
  page: string
}

export function benchSql(): BenchSql {
  // postgres.js connects lazily: this client only renders SQL and never opens a connection.
  const client = postgres('postgres://render-only@127.0.0.1:1/none', { max: 1 })
  const db = drizzle(client, { schema }) as unknown as Database
  const { sql: page } = changelogRepo(db).listQuery('prj_x', { limit: 20, offset: 0 }).toSQL()
  // get() is the same select and join, scoped by project and id (changelog.ts: viewQuery + scoped).
  const where = page.indexOf(' where ')
  if (where < 0 || !/ limit \$2$/.test(page)) throw new Error(`unexpected shape of the list query: ${page}`)
  const getEntry = `${page.slice(0, where)} where ("changelog_entries"."project_id" = $1 and "changelog_entries"."id" = $2)`
  return { getEntry, page }
}

/** pgbench's spelling: $n becomes :name (pgbench -M prepared binds them as parameters again). */
export const forPgbench = (text: string, names: string[]) => text.replace(/\$(\d+)/g, (_, n: string) => `:${names[Number(n) - 1]}`)

/**
 * A tester insert as testersRepo.enroll writes it (on conflict do nothing, returning the row),
 * with a fresh email, id and token generated in SQL. Run alone it is the ceiling for enrollment.
 */
export const pgbenchInsertTester = `insert into "beta_testers" ("id", "beta_program_id", "email", "token", "source", "status")
  values ('bt_' || substr(md5(random()::text), 1, 21), :program_id, 'pgbench-' || gen_random_uuid() || '@bench.test',
          md5(random()::text || clock_timestamp()::text), 'invite', 'invited')
  on conflict ("beta_program_id", "email") do nothing returning *;
`

/** The whole transaction enroll() runs: share-lock the program row, then insert (diagnostic). */
export const pgbenchEnrollTransaction = `begin;
select "status" from "beta_programs" where ("beta_programs"."project_id" = :project_id and "beta_programs"."id" = :program_id) for share;
${pgbenchInsertTester}commit;
`
