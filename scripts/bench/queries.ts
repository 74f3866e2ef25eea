// The SQL of the benchmark's floor and ceiling. pgbench (the floor) runs the API's own
// statements, taken from the repository's query builder, so it measures what PostgreSQL alone
// costs the API. The minimal server (the ceiling) runs the simplest correct query for each
// read, so that any price the API's SQL pays beyond it (a deferred join, a translation join, the
// key's subquery) shows as a gap in the table.
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import type { Database } from '../../src/db/client.js'
import { changelogRepo } from '../../src/db/repos/changelog.js'
import * as schema from '../../src/db/schema.js'

export interface BenchSql {
  /** $1 project id, $2 entry id: the API's GET /v1/changelog/{id} without a locale. */
  getEntry: string
  /** $1 project id, $2 limit + 1, $3 offset: the API's GET /v1/changelog page. */
  page: string
}

export function benchSql(): BenchSql {
  // postgres.js connects lazily: this client only renders SQL and never opens a connection.
  const client = postgres('postgres://render-only@127.0.0.1:1/none', { max: 1 })
  const db = drizzle(client, { schema }) as unknown as Database
  const repo = changelogRepo(db)
  const page = repo.listQuery('prj_x', { limit: 20, offset: 1 }).toSQL()
  const getEntry = repo.getQuery('prj_x', 'ch_x').toSQL()
  if (page.params.join() !== 'prj_x,21,1') throw new Error(`unexpected parameters of the list query: ${page.params.join()}`)
  if (getEntry.params.join() !== 'prj_x,ch_x') throw new Error(`unexpected parameters of the entry query: ${getEntry.params.join()}`)
  return { getEntry: getEntry.sql, page: page.sql }
}

/** The columns of a changelog record, in the order the minimal server reads them. */
const recordColumns = 'id, title, body, labels, published_at, locale, version, created_at, updated_at'

/**
 * The simplest correct queries, for the minimal server: $1 project id, $2 entry id (get) or
 * limit + 1 (page). The published list's order is written `desc nulls last`, the order of
 * changelog_entries_project_published_idx: a plain `desc` means NULLS FIRST, which PostgreSQL
 * holds to be another order (even where `published_at <= now()` excludes nulls) and serves by
 * sorting every row of the project, 600 ms a page on the seed instead of 0.04 ms.
 */
export const simplestSql = {
  getEntry: `select ${recordColumns} from changelog_entries where project_id = $1 and id = $2`,
  page: `select ${recordColumns} from changelog_entries where project_id = $1 and published_at <= now()
         order by published_at desc nulls last, id desc nulls last limit $2`,
} as const satisfies BenchSql

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
