// The benchmark's data set, written with generate_series in SQL (a million rows in seconds, not
// a million round trips). One project under test, with a fixed API key so a seed can be reused
// across runs, and other projects' rows interleaved with its own, as in a shared database.
import { createHash } from 'node:crypto'
import { getTableName, is } from 'drizzle-orm'
import { PgTable } from 'drizzle-orm/pg-core'
import * as schema from '../../src/db/schema.js'

/** Bumped whenever the seed changes shape, so an older seed is rebuilt rather than reused. */
export const SEED_NAME = 'bench seed v3'
export const PROJECT_ID = 'prj_benchProject000000001'
export const PROGRAM_ID = 'bp_benchProgram000000001'
export const KEY_ID = 'key_benchKey0000000000001'
/** fbk_ and 40 characters of [A-Za-z0-9_-], as the guard requires. */
export const API_KEY = 'fbk_benchmarkKeyForTheFeedbackServiceApi0001'
/** Every seeded tester's email starts so; anything else in the program was enrolled by a run. */
export const SEED_EMAIL_PREFIX = 'seed-'

export interface SeedScale {
  /** Changelog entries of the project under test, and testers in its one program. */
  benchRows: number
  /** Other projects, each with one program. */
  otherProjects: number
  /** Rows of other projects: half changelog entries, half testers. */
  otherRows: number
}

/** Runs one statement (or several, without parameters) and returns its rows. */
export type Exec = (text: string) => Promise<Record<string, unknown>[]>

const lit = (value: string) => `'${value.replace(/'/g, "''")}'`
const other = (kind: 'prj_other' | 'bp_other', n: string) => `'${kind}' || lpad((${n})::text, 16, '0')`

if (!/^fbk_[A-Za-z0-9_-]{40}$/.test(API_KEY)) throw new Error('API_KEY does not have the shape of a key')

/** Statements run in order, then the two bulk inserts (entries, testers), which may run side by side. */
export function seedStatements(scale: SeedScale): { setup: string[]; bulk: [string, string] } {
  const keyHash = createHash('sha256').update(API_KEY).digest('hex')
  const bench = scale.benchRows
  const total = bench + scale.otherRows / 2
  const others = scale.otherProjects
  // Row g of 1..total belongs to the project under test when floor(g*bench/total) steps up:
  // exactly `bench` rows, spread evenly among the others' (Bresenham).
  const isBench = `(g::bigint * ${bench}) / ${total} <> ((g::bigint - 1) * ${bench}) / ${total}`
  const otherN = others > 0 ? `(g % ${others}) + 1` : '1'
  // Distinct, all in the past, newest for g = 1.
  const at = `timestamptz '2025-06-01 00:00:00+00' - g * interval '1 minute'`
  const setup = [
    `insert into projects (id, name, plan, beta_enabled, created_at)
       values (${lit(PROJECT_ID)}, ${lit(SEED_NAME)}, 'pro', true, timestamptz '2024-01-01 00:00:00+00')`,
    `insert into api_keys (id, project_id, key_hash, prefix)
       values (${lit(KEY_ID)}, ${lit(PROJECT_ID)}, ${lit(keyHash)}, ${lit(API_KEY.slice(0, 8))})`,
    `insert into beta_programs (id, project_id, name, version, slug, summary, status, created_at)
       values (${lit(PROGRAM_ID)}, ${lit(PROJECT_ID)}, 'Benchmark beta', '2.1.0-beta.1', 'benchmark-beta',
               'The program under test', 'active', timestamptz '2024-01-02 00:00:00+00')`,
    `insert into projects (id, name, plan, beta_enabled, created_at)
       select ${other('prj_other', 'n')}, 'Other project ' || n, 'pro', true, timestamptz '2024-01-01 00:00:00+00' + n * interval '1 second'
       from generate_series(1, ${others}) n`,
    `insert into api_keys (id, project_id, key_hash, prefix)
       select 'key_other' || lpad(n::text, 16, '0'), ${other('prj_other', 'n')},
              encode(sha256(('fbk_other-' || n)::bytea), 'hex'), 'fbk_othe'
       from generate_series(1, ${others}) n`,
    `insert into beta_programs (id, project_id, name, slug, status, created_at)
       select ${other('bp_other', 'n')}, ${other('prj_other', 'n')}, 'Other beta ' || n, 'other-beta', 'active',
              timestamptz '2024-01-02 00:00:00+00' + n * interval '1 second'
       from generate_series(1, ${others}) n`,
  ]
  const bulk: [string, string] = [
    // Bodies of 500 characters; ids of the API's shape (prefix_ and 21 of [0-9A-Za-z]).
    // The HTML is what the API stores for such a body (plain text: one paragraph, trimmed), so
    // that the server's start-up has no body to render. Published long ago, and announced then
    // (announced_at), as on a live service: otherwise the server's publication sweep would spend
    // the run announcing them all.
    `insert into changelog_entries (id, project_id, title, body, body_html, labels, version, locale, published_at, announced_at, created_at, updated_at)
       select 'ch_' || substr(md5('ch-' || g), 1, 21),
              case when ${isBench} then ${lit(PROJECT_ID)} else ${other('prj_other', otherN)} end,
              'Release note ' || g,
              b.body, '<p>' || trim(b.body) || E'</p>\\n',
              case when g % 3 = 0 then array['new', 'ios'] else array['improved'] end,
              '1.' || (g % 100) || '.0', 'en', ${at}, ${at}, ${at}, ${at}
       from generate_series(1, ${total}) g,
            lateral (select substr(repeat(md5(g::text) || ' makes every screen follow the theme. ', 12), 1, 500) as body) b`,
    `insert into beta_testers (id, beta_program_id, email, token, source, status, invited_at)
       select 'bt_' || substr(md5('bt-' || g), 1, 21),
              case when ${isBench} then ${lit(PROGRAM_ID)} else ${other('bp_other', otherN)} end,
              '${SEED_EMAIL_PREFIX}' || g || '@bench.test', md5('token-' || g), 'invite', 'invited', ${at}
       from generate_series(1, ${total}) g`,
  ]
  return { setup, bulk }
}

export interface SeedCounts {
  seed: number
  projects: number
  bench_entries: number
  bench_testers: number
  entries: number
  testers: number
}

export function expectedCounts(scale: SeedScale): SeedCounts {
  const total = scale.benchRows + scale.otherRows / 2
  return { seed: 1, projects: 1 + scale.otherProjects, bench_entries: scale.benchRows, bench_testers: scale.benchRows, entries: total, testers: total }
}

export async function countSeed(exec: Exec): Promise<SeedCounts> {
  const [row] = await exec(`
    select (select count(*) from projects where id = ${lit(PROJECT_ID)} and name = ${lit(SEED_NAME)})::int as seed,
           (select count(*) from projects)::int as projects,
           (select count(*) from changelog_entries where project_id = ${lit(PROJECT_ID)})::int as bench_entries,
           (select count(*) from beta_testers where beta_program_id = ${lit(PROGRAM_ID)})::int as bench_testers,
           (select count(*) from changelog_entries)::int as entries,
           (select count(*) from beta_testers)::int as testers`)
  return row as unknown as SeedCounts
}

/**
 * What earlier runs wrote: the testers they enrolled (the API's and pgbench's), their events, and
 * webhook endpoints a run stopped short left subscribed, so every run starts alike.
 */
export const removeEnrolled = [
  `delete from beta_testers where beta_program_id = ${lit(PROGRAM_ID)} and email not like '${SEED_EMAIL_PREFIX}%'`,
  'truncate webhook_deliveries, events, webhook_endpoints',
]

/** Every table of the schema, so that a new table can never be left holding rows that reference a truncated one. */
export const truncateAll = `truncate ${(Object.values(schema) as unknown[])
  .filter((value): value is PgTable => is(value, PgTable))
  .map((table) => getTableName(table))
  .join(', ')}`

const sameCounts = (a: SeedCounts, b: SeedCounts) => (Object.keys(b) as (keyof SeedCounts)[]).every((k) => Number(a[k]) === b[k])

/**
 * Leaves the database holding exactly the seed: reused when the counts match (after removing
 * the testers earlier runs enrolled), rebuilt otherwise. `second`, another connection, lets the
 * two bulk inserts run at once. Returns whether it seeded.
 */
export async function ensureSeed(exec: Exec, scale: SeedScale, log: (line: string) => void, second?: Exec): Promise<boolean> {
  for (const statement of removeEnrolled) await exec(statement)
  const want = expectedCounts(scale)
  if (sameCounts(await countSeed(exec), want)) return false
  log(`seeding ${want.entries} changelog entries and ${want.testers} testers (${scale.benchRows} of each in the project under test)`)
  await exec(truncateAll)
  const { setup, bulk } = seedStatements(scale)
  for (const statement of setup) await exec(statement)
  if (second) await Promise.all([exec(bulk[0]), second(bulk[1])])
  else for (const statement of bulk) await exec(statement)
  const got = await countSeed(exec)
  if (!sameCounts(got, want)) throw new Error(`the seed wrote ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`)
  return true
}
