// The embedded database has one owner, and start-up explains itself (contract §9, issue #12):
// the CLI or a second server refuses a data directory the server holds, naming its PID, and
// changes nothing; a lock left by a killed process is taken over; a busy port or a bad setting
// is one line on stderr, before anything is created.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { LOCK_FILE } from '../../src/db/data-dir-lock.js'
import { newDataDir } from '../helpers/db.js'
import { ADMIN_ARGS, NODE_ARGS, asUserRuns, buildServer, embeddedEnv, exited, root, start } from '../helpers/server.js'

// Each test starts real servers and CLIs (PGlite opens in a second or two each, more on a busy machine).
t.setTimeout(360_000)
buildServer()

/** What `npm run admin -- ...` runs once dist/ is built (buildServer, as the file loads); its exit code and what it printed. */
function admin(env: NodeJS.ProcessEnv, ...args: string[]) {
  const run = spawnSync(...asUserRuns(process.execPath, [...ADMIN_ARGS, ...args]), { cwd: root, env, encoding: 'utf8' })
  return { status: run.status, stdout: run.stdout, stderr: run.stderr }
}

/** Runs the server to its end: a start that must fail. */
function failedStart(env: NodeJS.ProcessEnv) {
  const run = spawnSync(...asUserRuns(process.execPath, NODE_ARGS), { cwd: root, env, encoding: 'utf8', timeout: 60_000 })
  return { status: run.status, stdout: run.stdout, stderr: run.stderr }
}

/** Turns of the event loop until `done()` holds: bounded by the test's timeout, never by a deadline of its own. */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await done())) await sleep(20)
}

const v1 = (base: string, key: string) => fetch(`${base}/v1/changelog`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status)

t.test('the embedded database has one owner: the CLI refuses while the server runs, and nothing is lost', async (t) => {
  const dataDir = await newDataDir(t)
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const base = `http://127.0.0.1:${port}`
  const server = await start(dataDir, port, /This key is shown once/)
  const key = /API key: (fbk_[A-Za-z0-9_-]{40})/.exec(server.stdout())![1]!

  const refused = admin(embeddedEnv(dataDir, port), 'create-project', '--name', 'From the shell')
  t.equal(refused.status, 1, 'the CLI fails')
  t.equal(refused.stdout, '', 'and prints no project or key')
  const lines = refused.stderr.trim().split('\n')
  t.equal(lines.length, 1, `one line: ${refused.stderr}`)
  t.match(lines[0], new RegExp(`in use by process ${server.child.pid} \\(the server`), 'naming the holder by its PID')
  t.notMatch(refused.stderr, /\n\s+at /, 'no stack trace')

  const second = failedStart(embeddedEnv(dataDir, port + 1))
  t.equal(second.status, 1, 'a second server on the same data directory fails too')
  t.match(second.stderr, new RegExp(`^Cannot start: The embedded database in .* is in use by process ${server.child.pid} `))

  t.equal(await v1(base, key), 200, 'the server still serves its data')
  const exit = exited(server.child)
  server.child.kill('SIGTERM')
  t.equal(await exit, 0)

  // Stopped, the data directory is free: the CLI works, says where, and the server sees its work.
  const created = admin(embeddedEnv(dataDir, port), 'create-project', '--name', 'From the shell', '--plan', 'pro')
  t.equal(created.status, 0, created.stderr)
  t.match(created.stderr, `Using the embedded database in ${dataDir}.`)
  const shellKey = JSON.parse(created.stdout).api_key as string
  const again = await start(dataDir, port)
  t.notMatch(again.stdout(), /API key:/, 'no new demo project')
  t.equal(await v1(base, key), 200, 'the demo project survived')
  t.equal(await v1(base, shellKey), 200, 'the project made from the shell is there')
  const exit2 = exited(again.child)
  again.child.kill('SIGTERM')
  t.equal(await exit2, 0)
})

t.test('a lock left by a killed process does not lock anybody out', async (t) => {
  const dataDir = await newDataDir(t)
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const server = await start(dataDir, port, /This key is shown once/)
  const exit = exited(server.child)
  server.child.kill('SIGKILL')
  await exit
  t.ok(existsSync(join(dataDir, LOCK_FILE)), 'the killed server left its lock behind')
  const listed = admin(embeddedEnv(dataDir, port), 'create-project', '--name', 'After the crash')
  t.equal(listed.status, 0, listed.stderr)
  // Stopped as soon as its port is open, this start has only its jobs to start: it drains and
  // exits 0 (the first start, which also creates the demo project, is the last test's).
  const restarted = await start(dataDir, port)
  t.notMatch(restarted.stdout(), /API key:/, 'the data is still there: no new demo project')
  const exit2 = exited(restarted.child)
  restarted.child.kill('SIGTERM')
  t.equal(await exit2, 0, 'a SIGTERM as soon as the port is open: exit code 0')
  t.match(restarted.stdout(), /"msg":"shutting down"/, 'drained')
})

t.test('start-up that explains itself: a busy port or a bad setting is one line, and nothing is created', async (t) => {
  const dataDir = await newDataDir(t)
  const busy = createServer()
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
  const port = (busy.address() as AddressInfo).port

  const refused = failedStart(embeddedEnv(dataDir, port))
  busy.close()
  t.equal(refused.status, 1)
  t.equal(refused.stderr, `Cannot start: Port ${port} on 127.0.0.1 is already in use by another process: stop it, or set PORT to a free port.\n`)
  t.notMatch(refused.stdout, /API key|demo project/, 'no demo project whose key nobody could use')

  const started = await start(dataDir, port, /This key is shown once/)
  t.match(started.stdout(), /API key: fbk_/, 'the next start creates the demo project and prints its key')
  const exit = exited(started.child)
  started.child.kill('SIGTERM')
  t.equal(await exit, 0)

  for (const [name, value] of [['PORT', 'abc'], ['HOST', 'not-an-address'], ['ADMIN_TOKEN', 'short'], ['DB_POOL_SIZE', '0'], ['DATABASE_URL', 'mysql://x']] as const) {
    const bad = failedStart(embeddedEnv(dataDir, port, { [name]: value }))
    t.equal(bad.status, 1, `${name}=${value} stops the start`)
    const lines = bad.stderr.trim().split('\n')
    t.equal(lines.length, 1, `${name}=${value}: one line`)
    t.match(lines[0], new RegExp(`^Cannot start: ${name} `), `${name}=${value}: names the variable`)
  }
})

t.test('a PostgreSQL that refuses the start is one line for the server, the admin CLI and db:migrate, not a stack trace', async (t) => {
  // They printed the driver's error and stack (found by a takeover review).
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const nowhere = (closed.address() as AddressInfo).port
  await new Promise((resolve) => closed.close(resolve))
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const cases = [
    [`postgres://postgres@127.0.0.1:${nowhere}/app`, `PostgreSQL at 127.0.0.1:${nowhere}/app cannot be reached (connect ECONNREFUSED 127.0.0.1:${nowhere}): start it, or set DATABASE_URL to a database that answers.`],
    [
      'postgres://postgres@127.0.0.1:5432/feedback_no_such_database',
      'PostgreSQL at 127.0.0.1:5432/feedback_no_such_database refused the start: database "feedback_no_such_database" does not exist (SQLSTATE 3D000): create it (createdb), or set DATABASE_URL to a database that exists.',
    ],
  ] as const
  for (const [url, line] of cases) {
    const env = { ...embeddedEnv('unused', port), DATABASE_URL: url }
    const server = failedStart(env)
    t.equal(server.status, 1, `${url}: the server exits 1`)
    t.equal(server.stderr, `Cannot start: ${line}\n`, `${url}: the server says why in one line`)
    const cli = admin(env, 'list-projects')
    t.equal(cli.status, 1, `${url}: the admin CLI exits 1`)
    t.equal(cli.stderr, `Cannot run: ${line}\n`, `${url}: the admin CLI says why in one line`)
    const migrate = spawnSync(...asUserRuns(process.execPath, ['dist/scripts/migrate.js']), { cwd: root, env, encoding: 'utf8' })
    t.equal(migrate.status, 1, `${url}: db:migrate exits 1`)
    t.equal(migrate.stderr, `Cannot migrate: ${line}\n`, `${url}: db:migrate says why in one line`)
  }
})

t.test('npm start under a supervisor: a SIGTERM to npm drains the server, and npm exits after it, with 0', async (t) => {
  // npm ran the server through a shell, which npm's SIGTERM ended at once: npm exited, and the
  // server, never signalled, went on serving and holding the data directory (found by a newcomer
  // review). package.json's `exec` makes the server npm's own child. The same stop may then reach
  // the server twice (npm passes it on; a terminal signals npm's whole process group): the copy
  // is ignored, here sent straight after.
  const dataDir = await newDataDir(t)
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const npm = spawn(...asUserRuns('npm', ['start']), { cwd: root, env: embeddedEnv(dataDir, port), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  npm.stdout!.on('data', (chunk) => (out += chunk))
  npm.stderr!.on('data', (chunk) => (out += chunk))
  const npmExit = new Promise<{ code: number | null; at: number }>((resolve) => npm.on('exit', (code) => resolve({ code, at: performance.now() })))
  await until(() => /This key is shown once/.test(out))
  const key = /API key: (fbk_[A-Za-z0-9_-]{40})/.exec(out)![1]!
  const serverPid = (JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number }).pid
  t.not(serverPid, npm.pid, 'the server is a process of its own')

  // A write in flight: the server has its headers (it said 100 Continue) and half its body
  // before the signal, the rest after.
  const body = JSON.stringify({ title: 'Sent across the stop', status: 'published' })
  let inFlight: ReturnType<typeof request> | undefined
  const answered = new Promise<{ status: number; at: number }>((resolve, reject) => {
    const req = request(`http://127.0.0.1:${port}/v1/changelog`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
    })
    req.on('continue', () => {
      req.write(body.slice(0, 10))
      inFlight = req
    })
    req.on('response', (res) => res.resume().on('end', () => resolve({ status: res.statusCode!, at: performance.now() })))
    req.on('error', reject)
    req.flushHeaders()
  })
  await until(() => inFlight !== undefined)
  npm.kill('SIGTERM')
  process.kill(serverPid, 'SIGTERM')
  // Draining: the port no longer takes connections.
  await until(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).then(() => false, () => true)))
  inFlight!.end(body.slice(10))

  const write = await answered
  t.equal(write.status, 201, 'the write in flight is answered')
  const exit = await npmExit
  t.equal(exit.code, 0, 'npm exits 0: the server drained')
  t.ok(exit.at >= write.at, 'npm exits after the server has answered')
  t.notMatch(out, /second SIGTERM/, 'the copy of the signal did not stop the server at once')
  t.throws(() => process.kill(serverPid, 0), { code: 'ESRCH' }, 'no server is left running')
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'the data directory is free')
})

t.test('npm run admin -- --help prints the usage, and an unknown command is refused, before any database is opened', async (t) => {
  const dataDir = join(await newDataDir(t), 'never-made')
  for (const help of ['--help', '-h', 'help']) {
    const run = admin(embeddedEnv(dataDir, 0), help)
    t.equal(run.status, 0, `${help}: exit code 0`)
    t.match(run.stdout, /^Usage: npm run admin -- <command>\n/, `${help}: the usage, on stdout`)
    t.equal(run.stderr, '', `${help}: no database named`)
  }
  const unknown = admin(embeddedEnv(dataDir, 0), 'launch')
  t.equal(unknown.status, 1, 'an unknown command: exit code 1')
  t.match(unknown.stderr, /^validation_failed: Unknown command "launch"\.\n\nUsage: /, 'named, with the usage, and no database named')
  t.notOk(existsSync(dataDir), 'no data directory made')
})

t.test('a process that holds the lock and never lets it go still exits when its work is done', async (t) => {
  // The heartbeat's thread kept the process alive once a listener was attached after unref()
  // (found by a review); the exit releases the lock.
  const dataDir = await newDataDir(t)
  const script = `import(${JSON.stringify(join(root, 'dist/src/db/data-dir-lock.js'))}).then((lock) => lock.lockDataDir(${JSON.stringify(dataDir)}, 'a script'))`
  const run = spawnSync(...asUserRuns(process.execPath, ['-e', script]), { cwd: root, encoding: 'utf8', timeout: 60_000 })
  t.equal(run.signal, null, 'not killed at the timeout')
  t.equal(run.status, 0, run.stderr)
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'its lock released at exit')
})

t.test('a SIGTERM as soon as the port is open is not a kill: the start finishes, then the server drains and exits 0', async (t) => {
  const dataDir = await newDataDir(t)
  // A first start also creates the demo project after it listens (a later start: the test of a
  // lock left by a killed process). PORT=0: the system chooses the port.
  const server = await start(dataDir, 0)
  const exit = exited(server.child)
  server.child.kill('SIGTERM')
  t.equal(await exit, 0, 'exit code 0')
  t.match(server.stdout(), /"msg":"shutting down"/, 'drained')
  const listening = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(server.stdout())?.[1]
  t.not(listening, '0')
  t.match(server.stdout(), `http://127.0.0.1:${listening}/v1/changelog`, "the demo key's example names the port the system chose")
})
