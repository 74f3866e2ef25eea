// `npm run build` (scripts/build.mjs), which `npm start` and `npm run admin` run first: a dist/
// that already holds the build is left as it is (a server may be running from it, and loads its
// Markdown worker from it after start-up), and a changed source is built and swapped in. Run in
// a copy of the sources, so that no other test's server sees it.
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { buildIn, root } from '../helpers/server.js'

t.test('a build that finds dist/ current writes nothing; a changed source is swapped in whole', async (t) => {
  const copy = mkdtempSync(join(tmpdir(), 'feedback-build-'))
  t.teardown(() => rmSync(copy, { recursive: true, force: true }))
  for (const path of ['src', 'generated', 'scripts']) cpSync(join(root, path), join(copy, path), { recursive: true })
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))
  const build = () => buildIn(copy)
  const dist = join(copy, 'dist')
  const app = join(dist, 'src/app.js')

  build()
  const first = { dir: statSync(dist).ino, app: statSync(app) }
  build()
  t.equal(statSync(dist).ino, first.dir, 'the same dist/ directory: nothing swapped')
  t.equal(statSync(app).ino, first.app.ino, 'and the same files in it')

  appendFileSync(join(copy, 'src/app.ts'), '\nexport const builtAgain = true\n')
  build()
  t.not(statSync(dist).ino, first.dir, 'a changed source: a new dist/, swapped in')
  t.match(readFileSync(app, 'utf8'), /builtAgain = true/, 'holding the change')
  t.ok(statSync(join(dist, 'scripts/admin.js')).isFile(), 'and every other file of the build')
})
