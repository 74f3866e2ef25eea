// Every list query is served by an index in its own order: no Sort node, whatever the filter.
// (The changelog list has the same check in test/changelog/list-entries.test.ts.)
import t from 'tap'
import { makeRepos } from '../../src/db/repos/index.js'
import { hashApiKey } from '../../src/domain/secrets.js'
import { createProject } from '../helpers/app.js'
import { explainPlan, sortsBeyondAPage, testDatabase } from '../helpers/db.js'

t.test('program, tester and feedback lists use their indexes without sorting', async (t) => {
  const { db } = await testDatabase()
  const repos = makeRepos(db)
  const { id: projectId, key } = await createProject()
  const { id: programId } = await repos.programs.create(projectId, 'plans', { name: 'Plans' } as never)
  const at = new Date('2026-01-01T00:00:00.000Z')
  // By the project's id, and by the API key itself (the GETs of /v1).
  for (const scope of [projectId, { keyHash: hashApiKey(key), beta: true }]) {
    const by = typeof scope === 'string' ? 'by id' : 'by key'
    for (const status of [undefined, 'active'] as const) {
      for (const after of [undefined, { at, id: 'bp_zzzzzzzzzzzzzzzzzzzzz' }]) {
        const what = `${by}, status ${status}, ${after ? 'cursor' : 'offset'}`
        const programs = await explainPlan(repos.programs.listQuery(scope, { status, limit: 26, offset: 0, after }))
        t.match(programs, /Index Scan using beta_programs_project_(status_)?created_idx/, `programs (${what})`)
        t.notMatch(programs, /Sort/, `programs: no Sort (${what})`)
        if (after) t.match(programs, /Index Cond: .*ROW\(created_at, id\) < ROW\(/, `programs: the cursor is an index condition (${what})`)
      }
    }
    for (const status of [undefined, 'invited'] as const) {
      for (const after of [undefined, { at, id: 'bt_zzzzzzzzzzzzzzzzzzzzz' }]) {
        const what = `${by}, status ${status}, ${after ? 'cursor' : 'offset'}`
        const testers = await explainPlan(repos.testers.listQuery(scope, programId, { status, limit: 26, offset: 0, after }))
        t.match(testers, /Index Scan using beta_testers_program_(status_)?invited_idx/, `testers (${what})`)
        t.notMatch(testers, /Sort/, `testers: no Sort (${what})`)
        if (after) t.match(testers, /Index Cond: .*ROW\(invited_at, id\) < ROW\(/, `testers: the cursor is an index condition (${what})`)
      }
    }
    for (const testerId of [undefined, 'bt_AAAAAAAAAAAAAAAAAAAAA']) {
      for (const after of [undefined, { at, id: 'fb_zzzzzzzzzzzzzzzzzzzzz' }]) {
        const what = `${by}, tester ${testerId}, ${after ? 'cursor' : 'offset'}`
        const feedback = await explainPlan(repos.feedback.listQuery(scope, programId, { testerId, limit: 26, offset: 0, after }))
        t.match(feedback, testerId ? /Index Scan using beta_feedback_tester_created_idx/ : /Index Scan using beta_feedback_program_idx/, `feedback (${what})`)
        t.notMatch(feedback, /Sort/, `feedback: no Sort (${what})`)
        if (after) t.match(feedback, /Index Cond: .*ROW\(created_at, id\) < ROW\(/, `feedback: the cursor is an index condition (${what})`)
      }
    }
  }
})

t.test("the operator's lists of projects and of a project's keys use their indexes without sorting", async (t) => {
  const { db } = await testDatabase()
  const repos = makeRepos(db)
  const { id: projectId } = await createProject()
  const at = new Date('2026-01-01T00:00:00.000Z')
  for (const after of [undefined, { at, id: 'prj_zzzzzzzzzzzzzzzzzzzzz' }]) {
    const what = after ? 'cursor' : 'offset'
    const projects = await explainPlan(repos.projects.listQuery({ limit: 26, offset: 0, after }))
    t.match(projects, /Index Scan using projects_created_idx/, `projects (${what})`)
    t.notMatch(projects, /Sort/, `projects: no Sort (${what})`)
    if (after) t.match(projects, /Index Cond: .*ROW\(created_at, id\) < ROW\(/, 'projects: the cursor is an index condition')
    const keys = await explainPlan(repos.projects.listKeysQuery(projectId, { limit: 26, offset: 0, after: after && { at, id: 'key_zzzzzzzzzzzzzzzzzzzzz' } }))
    t.match(keys, /Index Scan using api_keys_project_created_idx/, `keys (${what})`)
    t.notMatch(keys, /Sort/, `keys: no Sort (${what})`)
    if (after) t.match(keys, /Index Cond: .*ROW\(created_at, id\) < ROW\(/, 'keys: the cursor is an index condition')
  }
})

t.test('sortsBeyondAPage tells a sort of the page from a sort of every matching row', async (t) => {
  const pageSort = ['Sort  (rows=21)', '  ->  Nested Loop', '        ->  Limit', '              ->  Index Only Scan using x', '        ->  Index Scan using pkey'].join('\n')
  const fullSort = ['Limit  (rows=21)', '  ->  Sort  (rows=100000)', '        ->  Seq Scan on changelog_entries'].join('\n')
  t.notOk(sortsBeyondAPage(pageSort))
  t.ok(sortsBeyondAPage(fullSort))
})
