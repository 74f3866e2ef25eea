// CI runs `npm test` twice, on the embedded database and on PostgreSQL (.ci/run), and each test
// once: the files that never use the database DATABASE_URL names run in one pass only, some in
// the PGlite pass (EMBEDDED_PASS_ONLY, the PostgreSQL pass's TAP_EXCLUDE), the others in the
// PostgreSQL pass (POSTGRES_PASS_ONLY, in the PGlite pass's). This holds each of them to that,
// so that no test of either database is lost from CI by being listed there.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { minimatch } from 'minimatch'
import t from 'tap'
import { excludedBy, folderFiles } from '../helpers/folder-suite.js'

const root = new URL('../..', import.meta.url).pathname
const testFiles = readdirSync(join(root, 'test'), { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
  .map((entry) => relative(root, join(entry.parentPath, entry.name)))

/** One of .ci/run's lists of patterns. */
function ciList(name: string): string[] {
  const found = new RegExp(`^${name}='([^']*)'$`, 'm').exec(readFileSync(join(root, '.ci/run'), 'utf8'))
  if (!found) throw new Error(`.ci/run no longer sets ${name}='...'`)
  return excludedBy(found[1])
}
const LISTS = { EMBEDDED_PASS_ONLY: ciList('EMBEDDED_PASS_ONLY'), POSTGRES_PASS_ONLY: ciList('POSTGRES_PASS_ONLY') }
const listedIn = (patterns: string[]) => testFiles.filter((file) => patterns.some((pattern) => minimatch(file, pattern)))

/**
 * What reaches the database DATABASE_URL names: the test app and its database (test/helpers/app.ts,
 * db.ts), a server or CLI started on PostgreSQL (postgresEnv), the app or its client built directly,
 * or the variable itself.
 */
const USES_DATABASE_URL =
  /from '[^']*(?:helpers\/app|src\/app|src\/db\/client)\.js'|\b(?:testDatabase|postgresTestUrl|freshPostgresDatabase|newTestDatabase|webhookDatabase|postgresEnv|explainPlan|statementsRun|scheduledTimeArrives)\b|process\.env\.DATABASE_URL/

t.test('the files only one pass runs never use the database DATABASE_URL names', async (t) => {
  for (const [name, patterns] of Object.entries(LISTS)) {
    const listed = listedIn(patterns)
    for (const pattern of patterns) t.ok(listed.some((file) => minimatch(file, pattern)), `${name}: ${pattern} names a test file`)
    // This file is left out: its own samples (the last test) would match.
    for (const file of listed.filter((file) => file !== 'test/tooling/passes.test.ts')) {
      const uses = USES_DATABASE_URL.exec(readFileSync(join(root, file), 'utf8'))
      t.equal(uses?.[0], undefined, `${name}: ${file} uses no database of DATABASE_URL's`)
    }
  }
  t.ok(listedIn(LISTS.EMBEDDED_PASS_ONLY).includes('test/docs/readme-examples.test.ts'), 'the lists are read (the README examples run in the PGlite pass)')
  t.ok(listedIn(LISTS.POSTGRES_PASS_ONLY).includes('test/tooling/passes.test.ts'), '(and this file in the PostgreSQL pass)')
  t.same(listedIn(LISTS.EMBEDDED_PASS_ONLY).filter((file) => listedIn(LISTS.POSTGRES_PASS_ONLY).includes(file)), [], 'no file is left out of both passes')
  t.same(listedIn(LISTS.EMBEDDED_PASS_ONLY).filter((file) => file.startsWith('test/reliability/')), [], 'nor a reliability test, which the PGlite pass leaves out')
})

t.test("a pass's TAP_EXCLUDE leaves files out of a folder's index as tap leaves out whole files", async (t) => {
  const exclude = LISTS.POSTGRES_PASS_ONLY.join('\n')
  t.notOk(folderFiles('contract', exclude).includes('test/contract/breaking-change-gate.test.ts'), 'the excluded file is left out')
  t.ok(folderFiles('contract', exclude).includes('test/contract/adversarial.test.ts'), 'the rest of its folder runs')
  t.ok(folderFiles('contract', '').includes('test/contract/breaking-change-gate.test.ts'), 'without TAP_EXCLUDE the index runs it')
})

t.test('a file that uses the database of DATABASE_URL is caught', async (t) => {
  for (const line of ["import { call, testApp } from '../helpers/app.js'", 'const url = process.env.DATABASE_URL', 'env: postgresEnv(url, port)']) {
    t.match(line, USES_DATABASE_URL, line)
  }
  t.notMatch("import { embeddedEnv, start } from '../helpers/server.js'", USES_DATABASE_URL, 'a server on the embedded database is not')
})
