// Every list query is served by an index in its own order: no Sort node, whatever the filter.
// (The changelog list has the same check in test/changelog/list-entries.test.ts.)
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { createProject } from '../helpers/app.js'
import { explainPlan, testDatabase } from '../helpers/db.js'

t.test('program and tester lists use their indexes without sorting', async (t) => {
  const { db } = await testDatabase()
  const repos = makeRepos(db)
  const { id: projectId } = await createProject()
  const { id: programId } = await repos.programs.create(projectId, 'plans', { name: 'Plans' } as never)

  for (const status of [undefined, 'active'] as const) {
    const programs = await explainPlan(repos.programs.list(projectId, { status, limit: 26, offset: 0 }))
    t.match(programs, /Index Scan using beta_programs_project_(status_)?created_idx/, `programs (status ${status})`)
    t.notMatch(programs, /Sort/, `programs: no Sort (status ${status})`)
  }
  for (const status of [undefined, 'invited'] as const) {
    const testers = await explainPlan(repos.testers.listQuery(projectId, programId, { status, limit: 26, offset: 0 }))
    t.match(testers, /Index Scan using beta_testers_program_(status_)?invited_idx/, `testers (status ${status})`)
    t.notMatch(testers, /Sort/, `testers: no Sort (status ${status})`)
  }
})
