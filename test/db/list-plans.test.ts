// Every list query is served by an index in its own order: no Sort node, whatever the filter.
// (The changelog list has the same check in test/changelog/list-entries.test.ts.)
import { sql, type SQLWrapper } from 'drizzle-orm'
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { createProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

async function plan(query: SQLWrapper): Promise<string> {
  const { db } = await testDatabase()
  return db.transaction(async (tx) => {
    // The tables are tiny here: without this a sequential scan would be cheaper and prove nothing.
    await tx.execute(sql`set local enable_seqscan = off`)
    await tx.execute(sql`set local enable_bitmapscan = off`)
    const result = await tx.execute(sql`explain ${query}`)
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, string>[]
    return rows.map((row) => Object.values(row)[0]).join('\n')
  })
}

t.test('program and tester lists use their indexes without sorting', async (t) => {
  const { db } = await testDatabase()
  const repos = makeRepos(db)
  const { id: projectId } = await createProject()
  const { id: programId } = await repos.programs.create(projectId, 'plans', { name: 'Plans' } as never)

  for (const status of [undefined, 'active'] as const) {
    const programs = await plan(repos.programs.list(projectId, { status, limit: 26, offset: 0 }))
    t.match(programs, /Index Scan using beta_programs_project_(status_)?created_idx/, `programs (status ${status})`)
    t.notMatch(programs, /Sort/, `programs: no Sort (status ${status})`)
  }
  for (const status of [undefined, 'invited'] as const) {
    const testers = await plan(repos.testers.listQuery(projectId, programId, { status, limit: 26, offset: 0 }))
    t.match(testers, /Index Scan using beta_testers_program_(status_)?invited_idx/, `testers (status ${status})`)
    t.notMatch(testers, /Sort/, `testers: no Sort (status ${status})`)
  }
})
