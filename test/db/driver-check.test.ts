// The guard around the postgres.js patch: the install applies it without dev dependencies and
// fails loudly when it cannot (another version, a change that no longer matches), and the
// server refuses to start on a driver without it. Each case runs on a copy of the driver in a
// temporary project, made unpatched by reversing the patch, never on the installed one.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { parsePatch } from '../../patches/apply.mjs'
import { SetupError } from '../../src/config.js'
import { assertPatchedDriver, driverProblems, installedDriverDir, PATCH_CHANGES, PATCHED_VERSION } from '../../src/db/driver-check.js'
import { asUserRuns } from '../helpers/server.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const patchFile = join(root, 'patches', `postgres+${PATCHED_VERSION}.patch`)
const patchText = readFileSync(patchFile, 'utf8')

/** A project with patches/ and node_modules/postgres as npm installs it (the patch reversed). */
function unpatchedProject(t: Test): { project: string; driver: string } {
  const project = mkdtempSync(join(tmpdir(), 'driver-check-'))
  t.teardown(() => rmSync(project, { recursive: true, force: true }))
  const driver = join(project, 'node_modules', 'postgres')
  cpSync(installedDriverDir(), driver, { recursive: true })
  cpSync(join(root, 'patches'), join(project, 'patches'), { recursive: true })
  for (const { path, hunks } of parsePatch(patchText)) {
    const file = join(project, path)
    let text = readFileSync(file, 'utf8')
    for (const { before, after } of hunks) text = text.replace(after, () => before)
    writeFileSync(file, text)
  }
  return { project, driver }
}

function thrown(fn: () => void): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  return undefined
}

/** `node patches/apply.mjs` in `project`, as npm's postinstall runs it (no dev dependencies there). */
const install = (project: string) => spawnSync(...asUserRuns(process.execPath, [join(project, 'patches', 'apply.mjs')]), { cwd: project, encoding: 'utf8' })

t.test('the installed driver is the patched one, and every place names the same version', async (t) => {
  t.same(driverProblems(), [])
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
  t.equal(manifest.dependencies.postgres, PATCHED_VERSION, 'package.json pins exactly the version of the patch')
  for (const change of Object.keys(PATCH_CHANGES)) {
    t.ok(patchText.includes(`[feedback patch: ${change}]`), `the patch carries the marker of "${change}"`)
  }
  const markers = new Set([...patchText.matchAll(/\[feedback patch: ([a-z-]+)\]/g)].map((m) => m[1]))
  t.same([...markers].sort(), Object.keys(PATCH_CHANGES).sort(), 'and no change the start-up check does not know')
})

t.test('a production install (no dev dependencies) applies the patch; the start-up check then passes', async (t) => {
  const { project, driver } = unpatchedProject(t)
  t.ok(driverProblems(driver).length > 0, 'the copy starts unpatched')
  const run = install(project)
  t.equal(run.status, 0, run.stderr)
  t.same(driverProblems(driver), [])
  for (const build of ['src', 'cjs/src']) {
    for (const file of ['connection.js', 'queue.js']) {
      t.equal(readFileSync(join(driver, build, file), 'utf8'), readFileSync(join(installedDriverDir(), build, file), 'utf8'), `${build}/${file} as installed here`)
    }
  }
  const again = install(project)
  t.equal(again.status, 0, 'running it again (npm install on a patched tree) changes nothing and succeeds')
  t.match(again.stdout, /already patched/)
})

t.test('the start-up check refuses an unpatched driver, naming every missing change', async (t) => {
  const { driver } = unpatchedProject(t)
  const [problem] = driverProblems(driver)
  t.equal(problem, `postgres 3.4.9 is not patched, it lacks ${Object.keys(PATCH_CHANGES).join(', ')}`)
  t.ok(thrown(() => assertPatchedDriver(driver)) instanceof SetupError, 'a SetupError: one line on stderr and exit 1 at start-up')
  t.throws(() => assertPatchedDriver(driver), /postgres\.js is not the driver this server needs: postgres 3\.4\.9 is not patched, it lacks .*npm ci/)
})

t.test('a patch missing one change fails the start-up check', async (t) => {
  const { project, driver } = unpatchedProject(t)
  t.equal(install(project).status, 0)
  const queue = join(driver, 'src', 'queue.js')
  writeFileSync(queue, readFileSync(queue, 'utf8').replaceAll('[feedback patch: queue]', ''))
  t.same(driverProblems(driver), ['postgres 3.4.9 is not patched, it lacks queue in src/queue.js'])
})

t.test('another version of postgres.js fails the install and the start-up check', async (t) => {
  const { project, driver } = unpatchedProject(t)
  const manifest = join(driver, 'package.json')
  writeFileSync(manifest, readFileSync(manifest, 'utf8').replace(`"version": "${PATCHED_VERSION}"`, '"version": "3.4.10"'))
  const run = install(project)
  t.equal(run.status, 1, 'the install fails')
  t.match(run.stderr, `postgres 3.4.10 is installed, but ${join(project, 'patches', `postgres+${PATCHED_VERSION}.patch`)} is for ${PATCHED_VERSION}`)
  t.same(driverProblems(driver), [`postgres 3.4.10 is installed, patches/ is for ${PATCHED_VERSION}`])
  t.ok(thrown(() => assertPatchedDriver(driver)) instanceof SetupError, 'a SetupError: one line on stderr and exit 1 at start-up')
})

t.test('a change that no longer matches the installed file fails the install, leaving nothing half-applied in that file', async (t) => {
  const { project, driver } = unpatchedProject(t)
  const connection = join(driver, 'src', 'connection.js')
  const edited = readFileSync(connection, 'utf8').replace('clearImmediate(nextWriteTimer)\n    socket.removeListener', 'clearImmediate(nextWriteTimer) // edited\n    socket.removeListener')
  writeFileSync(connection, edited)
  const run = install(project)
  t.equal(run.status, 1)
  t.match(run.stderr, /change \d+ to node_modules\/postgres\/src\/connection\.js does not match postgres 3\.4\.9 as installed/)
  t.equal(readFileSync(connection, 'utf8'), edited, 'the file is as it was')
})

t.test('the server refuses to start on an unpatched driver: one line on stderr, exit code 1', async (t) => {
  // The project as it is, but with the unpatched copy as its node_modules/postgres: every other
  // package and the sources are symlinks, which Node keeps as their paths (--preserve-symlinks),
  // so that `postgres` resolves to the copy from src/ too.
  const { project } = unpatchedProject(t)
  for (const entry of ['src', 'generated', 'drizzle', 'openapi.yaml', 'package.json', 'tsconfig.json']) symlinkSync(join(root, entry), join(project, entry))
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry !== 'postgres') symlinkSync(join(root, 'node_modules', entry), join(project, 'node_modules', entry))
  }
  const server = spawnSync(...asUserRuns(process.execPath, ['--preserve-symlinks', '--preserve-symlinks-main', '--import', 'tsx', join(project, 'src', 'server.ts')]), {
    cwd: project,
    encoding: 'utf8',
    timeout: 60_000,
    // A PostgreSQL nobody listens on: the check comes before any connection.
    env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PORT: '0' },
  })
  t.equal(server.status, 1, 'exit code 1')
  t.match(server.stderr, /^Cannot start: postgres\.js is not the driver this server needs: postgres 3\.4\.9 is not patched, it lacks write-timer, .*\n$/)
})
