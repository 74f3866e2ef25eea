// PgBouncer (the Debian package, 1.18) in transaction pooling mode in front of the PostgreSQL
// that postgresTestUrl() names: on a free port, with its own configuration in a temporary
// directory, trusting every client. Fails, never skips, when it cannot start.
import { spawn, spawnSync } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { freePort } from './server.js'

export interface Pgbouncer {
  /** `postgres://user@127.0.0.1:<port>/<database>` through PgBouncer. */
  url(direct: string): string
  stop(): Promise<void>
}

const installed = () => ['pgbouncer', '/usr/sbin/pgbouncer'].find((candidate) => spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0)

/**
 * The pgbouncer command. On a fresh machine it is installed from the Debian package when the
 * tests run as root (as CI and this project's machines do), so that `npm test` needs no manual
 * step; otherwise the error says what to install.
 */
function binary(): string {
  let found = installed()
  if (!found && process.getuid?.() === 0) {
    const apt = (...args: string[]) => spawnSync('apt-get', args, { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0
    if (!apt('install', '-y', 'pgbouncer')) apt('update') && apt('install', '-y', 'pgbouncer')
    found = installed()
  }
  if (found) return found
  throw new Error('pgbouncer is not installed: apt-get install -y pgbouncer (it is needed to test DB_PREPARE=false behind PgBouncer)')
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })

/**
 * Starts PgBouncer in front of `direct`'s server (host and port), in transaction pooling mode,
 * configured as the README says unless `misconfigured` names a line it leaves out.
 */
export async function startPgbouncer(direct: string, options: { misconfigured?: 'ignore_startup_parameters' } = {}): Promise<Pgbouncer> {
  const command = binary()
  const target = new URL(direct)
  const user = decodeURIComponent(target.username) || 'postgres'
  const dir = mkdtempSync(join(tmpdir(), 'feedback-pgbouncer-'))
  const port = await freePort()
  const log = join(dir, 'pgbouncer.log')
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`)
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'default_pool_size = 20',
      'max_client_conn = 500',
      // postgres.js sends DB_STATEMENT_TIMEOUT_MS as a startup parameter, which PgBouncer
      // refuses unless told to ignore it (README, "Behind PgBouncer").
      options.misconfigured === 'ignore_startup_parameters' ? '' : 'ignore_startup_parameters = statement_timeout',
      // After a failed login to PostgreSQL (a restart), try again within a second, not 15 (README).
      'server_login_retry = 1',
      `logfile = ${log}`,
      '',
    ].join('\n'),
  )
  // PgBouncer refuses to run as root: it drops to PostgreSQL's own user, which must read its files.
  const asRoot = userInfo().uid === 0
  if (asRoot) {
    const owner = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
    const group = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
    if (owner.status !== 0) throw new Error('PgBouncer will not run as root, and there is no postgres user to run it as')
    for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, file), Number(owner.stdout), Number(group.stdout))
  }
  // Under a watchdog shell, so that PgBouncer and its directory go with this process even when
  // it is killed (a test timing out): the shell polls for its parent, then stops PgBouncer.
  const watchdog = [
    '"$@" & child=$!',
    'trap \'kill $child 2>/dev/null; wait $child; rm -rf "$DIR"; exit 0\' TERM INT',
    'while kill -0 $PPID 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.2; done',
    'kill $child 2>/dev/null; wait $child; rm -rf "$DIR"',
  ].join('\n')
  const args = [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')]
  const child = spawn('sh', ['-c', watchdog, 'pgbouncer-watchdog', command, ...args], { stdio: 'ignore', env: { ...process.env, DIR: dir } })
  let exited: string | undefined
  child.once('exit', (code, signal) => (exited = `exited (${signal ?? code})`))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await gone
    }
    rmSync(dir, { recursive: true, force: true })
  }
  for (let attempt = 0; !(await accepts(port)); attempt++) {
    if (exited || attempt >= 100) {
      const why = exited ?? 'not listening after 10 s'
      let tail = ''
      try {
        tail = spawnSync('tail', ['-n', '20', log], { encoding: 'utf8' }).stdout
      } catch {}
      await stop()
      throw new Error(`pgbouncer ${why}:\n${tail}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    url(databaseUrl: string) {
      const through = new URL(databaseUrl)
      through.hostname = '127.0.0.1'
      through.port = String(port)
      return through.href
    },
    stop,
  }
}
