// DATABASE_URL=postgres://... npx tsx scripts/with-pgbouncer.ts <command...>: runs the command
// with DATABASE_URL pointing at the same database through PgBouncer in transaction pooling mode
// (started on a free port by test/helpers/pgbouncer.ts) and DB_PREPARE=false, then stops
// PgBouncer. Exits with the command's status; fails when PgBouncer cannot start. CI runs the
// PostgreSQL contract tests so (.ci/run).
import { spawn } from 'node:child_process'
import { startPgbouncer } from '../test/helpers/pgbouncer.js'

const command = process.argv.slice(2)
const direct = process.env.DATABASE_URL
if (command.length === 0 || !direct) throw new Error('usage: DATABASE_URL=postgres://... tsx scripts/with-pgbouncer.ts <command> [args...]')
const bouncer = await startPgbouncer(direct)
let status = 1
try {
  const url = bouncer.url(direct)
  process.stderr.write(`PgBouncer 1.18 in transaction pooling mode at ${new URL(url).host} in front of ${new URL(direct).host}; DB_PREPARE=false\n`)
  const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env: { ...process.env, DATABASE_URL: url, DB_PREPARE: 'false' } })
  status = await new Promise<number>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))))
} finally {
  await bouncer.stop()
}
process.exit(status)
