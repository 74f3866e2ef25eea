// The real server on an empty PostgreSQL database (one this test creates and drops): it says how
// to get a first project and key, with the exact CLI command (DATABASE_URL's password masked)
// and the operator API; the command works as printed; a database with a project hears nothing.
// Fails, never skips, without PostgreSQL (see fixtures/pg.ts for when it runs).
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { freshPostgresDatabase } from '../helpers/db.js'
import { ADMIN_ARGS, asUserRuns, buildServer, exited, postgresEnv, root, start } from '../helpers/server.js'

// dist/ as `npm start` builds it, before the file's tests start (as it loads: the other files of
// its folder run in the same process, test/helpers/folder-suite.ts).
buildServer()

const PASSWORD = 'not-shown-0123'

t.test('an empty PostgreSQL database: the server says how to make the first project and key', async (t) => {
  const url = new URL(await freshPostgresDatabase(t))
  // Trust authentication ignores a password; with none in the URL, add one to see it masked.
  if (!url.password) url.password = PASSWORD
  const password = decodeURIComponent(url.password)
  const port = 20_000 + Math.floor(Math.random() * 20_000)

  const first = await start(postgresEnv(url.href, port), port, /No project yet[\s\S]*\n\n/)
  const out = first.stdout()
  t.notOk(out.includes(password), 'the password is never printed')
  const masked = `${url.protocol}//${url.username}:<password>@${url.host}${url.pathname}`
  const command = new RegExp(`DATABASE_URL='([^']+)' npm run admin -- (create-project .*)\\n`).exec(out)
  t.ok(command, "the CLI command is printed")
  t.equal(command![1], masked, 'with DATABASE_URL, its password replaced by a placeholder')
  t.match(out, `curl -s -X POST http://127.0.0.1:${port}/admin/v1/projects -H "Authorization: Bearer $ADMIN_TOKEN"`, 'and the operator API')
  t.match(out, /start the server with ADMIN_TOKEN set/, 'which needs ADMIN_TOKEN')
  t.ok(out.split('\n').filter((l) => l.startsWith('{')).every((l) => !l.includes('No project')), 'printed for a person, not logged')

  // The command works as printed (with the real password), while the server runs.
  const args = [...command![2]!.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!)
  const cli = await promisify(execFile)(...asUserRuns(process.execPath, [...ADMIN_ARGS, ...args]), { cwd: root, env: postgresEnv(url.href, port) })
  t.match(cli.stderr, `Using PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}.`)
  const created = JSON.parse(cli.stdout) as { data: { plan: string; beta_enabled: boolean }; api_key: string }
  t.match(created.data, { plan: 'pro', beta_enabled: true })
  const programs = await fetch(`http://127.0.0.1:${port}/v1/beta/programs`, { headers: { authorization: `Bearer ${created.api_key}` } })
  t.equal(programs.status, 200, 'its key works on the running server at once')

  const exit = exited(first.child)
  first.child.kill('SIGTERM')
  t.equal(await exit, 0)

  const second = await start(postgresEnv(url.href, port), port)
  t.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200)
  const exit2 = exited(second.child)
  second.child.kill('SIGTERM')
  await exit2
  t.notMatch(second.stdout(), /No project yet/, 'nothing said once a project exists')
})
