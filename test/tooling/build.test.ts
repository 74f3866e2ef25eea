// `npm run build` (scripts/build.mjs), which `npm start` and `npm run admin` run first: a dist/
// that already holds the build is left as it is (a server may be running from it, and loads its
// Markdown worker from it after start-up), and a changed source is built and swapped in. Run in
// copies of the sources, so that no other test's server sees them.
import { spawnSync } from 'node:child_process'
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { asUserRuns, buildIn, root } from '../helpers/server.js'

/** A copy of what the build reads, with the project's packages. */
function sourcesCopy(t: Test): string {
  const copy = mkdtempSync(join(tmpdir(), 'feedback-build-'))
  t.teardown(() => rmSync(copy, { recursive: true, force: true }))
  for (const path of ['src', 'generated', 'scripts', 'tsconfig.json', 'package.json']) cpSync(join(root, path), join(copy, path), { recursive: true })
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))
  return copy
}

t.test('a build that finds dist/ current writes nothing; a changed source is swapped in whole', async (t) => {
  const copy = sourcesCopy(t)
  const build = () => buildIn(copy)
  const dist = join(copy, 'dist')
  const app = join(dist, 'src/app.js')

  build()
  const first = { dir: statSync(dist).ino, app: statSync(app) }
  // Without its record (below), the build compares what it builds with dist/.
  rmSync(join(dist, '.build-record.json'))
  build()
  t.equal(statSync(dist).ino, first.dir, 'the same dist/ directory: nothing swapped')
  t.equal(statSync(app).ino, first.app.ino, 'and the same files in it')
  t.ok(existsSync(join(dist, '.build-record.json')), 'only its record written again')

  appendFileSync(join(copy, 'src/app.ts'), '\nexport const builtAgain = true\n')
  build()
  t.not(statSync(dist).ino, first.dir, 'a changed source: a new dist/, swapped in')
  t.match(readFileSync(app, 'utf8'), /builtAgain = true/, 'holding the change')
  t.ok(statSync(join(dist, 'scripts/admin.js')).isFile(), 'and every other file of the build')
})

t.test('a build from the sources dist/ was built from does not run esbuild; any change to either builds again', async (t) => {
  const copy = sourcesCopy(t)
  const dist = join(copy, 'dist')
  const app = join(dist, 'src/app.js')
  buildIn(copy)
  // An esbuild that cannot run: a build that loads it fails.
  const withoutEsbuild = () => spawnSync(...asUserRuns(process.execPath, ['scripts/build.mjs']), { cwd: copy, env: { ...process.env, ESBUILD_BINARY_PATH: '/bin/false' }, encoding: 'utf8' })

  t.equal(withoutEsbuild().status, 0, 'built from these sources, as dist/ records: nothing to do')
  appendFileSync(app, '\n// changed by hand\n')
  t.not(withoutEsbuild().status, 0, 'a file of dist/ changed: the build runs (and here fails)')
  buildIn(copy)
  t.notMatch(readFileSync(app, 'utf8'), /changed by hand/, 'and puts it back')
  t.equal(withoutEsbuild().status, 0, 'recording it')

  writeFileSync(join(copy, 'src/added.ts'), 'export const added: number = 1\n')
  t.not(withoutEsbuild().status, 0, 'a source added: the build runs')
  buildIn(copy)
  t.match(readFileSync(join(dist, 'src/added.js'), 'utf8'), /added = 1/, 'and builds it')
  rmSync(join(copy, 'src/added.ts'))
  buildIn(copy)
  t.notOk(existsSync(join(dist, 'src/added.js')), 'a source removed is gone from dist/')

  writeFileSync(join(dist, 'src/stray.js'), '')
  t.not(withoutEsbuild().status, 0, 'a file added to dist/: the build runs')
  buildIn(copy)
  t.notOk(existsSync(join(dist, 'src/stray.js')), 'and leaves only its own')

  writeFileSync(join(copy, 'src/db/tsconfig.json'), '{ "compilerOptions": { "useDefineForClassFields": false } }\n')
  t.not(withoutEsbuild().status, 0, 'a tsconfig.json esbuild would read for some sources: the build runs')
  buildIn(copy)
  writeFileSync(join(copy, 'tsconfig.json'), readFileSync(join(copy, 'tsconfig.json'), 'utf8').replace('{', '{ "_changed": true,'))
  t.not(withoutEsbuild().status, 0, 'the TypeScript settings changed: the build runs')
  t.same(readdirSync(copy).filter((name) => name.startsWith('dist.')), [], 'no staging directory or partial record left behind')
})
