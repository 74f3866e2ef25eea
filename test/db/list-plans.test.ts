// Every list query is served by an index in its own order: no Sort node, whatever the filter.
// (The changelog list has the same check in test/changelog/list-entries.test.ts.)
import t from 'tap'
import { DIRECT_MAX_OFFSET } from '../../src/db/repos/changelog.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { hashApiKey } from '../../src/domain/secrets.js'
import { createProject } from '../helpers/app.js'
import { explainPlan, indexScans, sortsBeyondAPage, testDatabase } from '../helpers/db.js'

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

t.test('every changelog list (status, label, locale, offset or cursor) reads its index in order, without sorting', async (t) => {
  const { id: projectId, key } = await createProject()
  const repo = makeRepos((await testDatabase()).db).changelog
  const at = new Date('2026-01-01T00:00:00.000Z')
  const lists = {
    published: { index: 'changelog_entries_project_published_idx', backward: false, cursor: /ROW\(published_at, id\) < ROW\(/ },
    // The same index read backwards: soonest first.
    scheduled: { index: 'changelog_entries_project_published_idx', backward: true, cursor: /ROW\(published_at, id\) > ROW\(/ },
    draft: { index: 'changelog_entries_project_draft_idx', backward: false, cursor: /ROW\(updated_at, id\) < ROW\(/ },
    all: { index: 'changelog_entries_project_created_idx', backward: false, cursor: /ROW\(created_at, id\) < ROW\(/ },
  } as const
  for (const scope of [projectId, { keyHash: hashApiKey(key), beta: false }]) {
    for (const [status, expected] of Object.entries(lists) as [keyof typeof lists, (typeof lists)[keyof typeof lists]][]) {
      for (const label of [undefined, 'new']) {
        for (const locale of [undefined, 'pt-BR']) {
          for (const position of [{ offset: 0 }, { offset: 10000 }, { offset: 0, after: { at, id: 'ch_zzzzzzzzzzzzzzzzzzzzz' } }]) {
            const what = `${typeof scope === 'string' ? 'by id' : 'by key'}, ${status}, label ${label}, locale ${locale}, ${position.after ? 'cursor' : `offset ${position.offset}`}`
            const plan = await explainPlan(repo.listQuery(scope, { status, label, locale, limit: 21, ...position }))
            const scan = indexScans(plan).find((s) => s.index.startsWith('changelog_entries_'))
            t.ok(scan, `an index scan of changelog_entries (${what})`)
            t.equal(scan?.index, expected.index, `the list's index (${what})`)
            t.equal(scan?.backward, expected.backward, `read ${expected.backward ? 'backwards' : 'forwards'} (${what})`)
            t.notOk(sortsBeyondAPage(plan), `sorts only the page (${what})`)
            t.notMatch(plan, /Seq Scan/, `no sequential scan (${what})`)
            if (position.after) t.match(scan?.cond, expected.cursor, `the cursor is an index condition (${what})`)
            // A label is checked on each row the index yields, in the list's order (see the README on its cost).
            if (label) t.match(scan?.filter, /labels @> (ARRAY\[|'\{)/, `the label is a filter on the list's index scan (${what})`)
            else t.notMatch(scan?.filter ?? '', /labels/, `no label, no filter (${what})`)
          }
        }
      }
    }
  }
})

t.test('indexScans reads each index scan with its condition and filter', async (t) => {
  const plan = [
    'Sort  (rows=21)',
    '  ->  Limit',
    '        ->  Index Scan Backward using a_idx on a  (cost=0.1..1 rows=1)',
    '              Index Cond: ((project_id = \'p\'::text) AND (published_at > now()))',
    '              Filter: (labels @> ARRAY[\'new\'::text])',
    '  ->  Index Only Scan using b_idx on b',
    '        Index Cond: (id = a.id)',
  ].join('\n')
  t.strictSame(indexScans(plan), [
    { node: 'Index Scan Backward', index: 'a_idx', backward: true, cond: "((project_id = 'p'::text) AND (published_at > now()))", filter: "(labels @> ARRAY['new'::text])" },
    { node: 'Index Only Scan', index: 'b_idx', backward: false, cond: '(id = a.id)', filter: '' },
  ])
})

t.test('a changelog page takes its plan by depth, and joins translations only for a locale', async (t) => {
  const { id: projectId, key } = await createProject()
  const repos = makeRepos((await testDatabase()).db)
  const repo = repos.changelog
  const at = new Date('2026-01-01T00:00:00.000Z')
  const deep = DIRECT_MAX_OFFSET + 1
  for (const scope of [projectId, { keyHash: hashApiKey(key), beta: false }]) {
    for (const status of ['published', 'scheduled', 'draft', 'all'] as const) {
      for (const label of [undefined, 'new']) {
        for (const locale of [undefined, 'pt-BR']) {
          for (const position of [{ offset: 0 }, { offset: DIRECT_MAX_OFFSET }, { offset: 0, after: { at, id: 'ch_zzzzzzzzzzzzzzzzzzzzz' } }, { offset: deep }, { offset: 10000 }]) {
            const what = `${typeof scope === 'string' ? 'by id' : 'by key'}, ${status}, label ${label}, locale ${locale}, ${position.after ? 'cursor' : `offset ${position.offset}`}`
            const query = repo.listQuery(scope, { status, label, locale, limit: 21, ...position })
            const scans = indexScans(await explainPlan(query)).filter((s) => s.index.startsWith('changelog_entries_'))
            if (position.offset < deep) {
              // Straight from the list's index: one scan of the entries, and the rows come with it.
              t.equal(scans.length, 1, `one scan of changelog_entries (${what})`)
              t.equal(scans[0]?.node.startsWith('Index Scan'), true, `the rows read from the list's index (${what})`)
            } else {
              // The deferred join: the page's ids from the list's index, then their rows by key.
              t.equal(scans.length, 2, `two scans of changelog_entries (${what})`)
              t.match(scans[0]?.index, /^changelog_entries_project_/, `the ids from the list's index (${what})`)
              t.equal(scans[1]?.index, 'changelog_entries_pkey', `the rows by their key (${what})`)
            }
            const text = query.toSQL().sql
            if (locale) t.match(text, /join "changelog_translations"/, `the translation joined (${what})`)
            else t.notMatch(text, /changelog_translations/, `no translation without a locale (${what})`)
          }
        }
      }
    }
  }
  for (const locale of [undefined, 'pt-BR']) {
    const text = repo.getQuery(projectId, 'ch_zzzzzzzzzzzzzzzzzzzzz', locale).toSQL().sql
    if (locale) t.match(text, /join "changelog_translations"/, 'GET by id in a locale joins its translation')
    else t.notMatch(text, /changelog_translations/, 'GET by id without a locale reads the entry alone')
  }
})
