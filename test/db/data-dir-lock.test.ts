// The embedded database's lock (contract §9): a live holder refuses a second opener; a lock whose
// process is gone is taken over, and so is one whose PID a later process got (found by a
// newcomer review: a container's server is PID 1 after every restart, and was refused its own
// data directory by the lock of its killed predecessor, PID 1 too).
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { settle } from '../helpers/clock.js'
import { LOCK_FILE, STALE_MS, lockDataDir, pidNamespace, processStart } from '../../src/db/data-dir-lock.js'

function dataDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'lock-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const lockOf = (dir: string) => JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as { pid: number; process_start?: string }
const writeLock = (dir: string, holder: object) => writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ role: 'the server', started_at: '2026-12-01T00:00:00.000Z', ...holder }))

t.test('this process holds a directory once: a second lock in it is refused', async (t) => {
  const dir = dataDir(t)
  const release = lockDataDir(dir, 'the server')
  t.throws(() => lockDataDir(dir, 'the admin CLI'), new RegExp(`in use by process ${process.pid} \\(the server`))
  t.equal(lockOf(dir).process_start, processStart(process.pid), 'the lock records when its process started')
  release()
  lockDataDir(dir, 'the server')()
})

t.test("a lock naming this process's PID that this process never took is a predecessor's, and taken over", async (t) => {
  const dir = dataDir(t)
  writeLock(dir, { pid: process.pid, process_start: 'an-earlier-boot/12345', pid_ns: pidNamespace() })
  const release = lockDataDir(dir, 'the server')
  t.equal(lockOf(dir).process_start, processStart(process.pid))
  release()
})

t.test('a lock naming a live process is taken over only when that process started after the lock was taken', async (t) => {
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' })
  t.teardown(() => other.kill())
  await new Promise((resolve) => other.once('spawn', resolve))
  const pid = other.pid!
  const start = processStart(pid)
  t.ok(start, 'Linux tells when a process started')

  const dir = dataDir(t)
  writeLock(dir, { pid, process_start: start })
  t.throws(() => lockDataDir(dir, 'the admin CLI'), new RegExp(`in use by process ${pid} `), 'its own lock: refused')
  writeLock(dir, { pid })
  t.throws(() => lockDataDir(dir, 'the admin CLI'), new RegExp(`in use by process ${pid} `), 'a lock that does not say when its process started: refused while the PID lives')
  writeLock(dir, { pid, process_start: `${start}0` })
  const release = lockDataDir(dir, 'the server')
  t.equal(lockOf(dir).pid, process.pid, 'a lock its PID had before it: taken over')
  release()
})

t.test('a lock from another PID namespace (another container on the volume) holds while its holder touches it', async (t) => {
  // Its PID means nothing here: two containers' servers are both PID 1. Taking such a lock over
  // because "PID 1 is this process" let a second container open a live server's database and
  // lose writes (found by a review of this change).
  const dir = dataDir(t)
  writeLock(dir, { pid: process.pid, process_start: processStart(process.pid), pid_ns: 'pid:[1]' })
  t.throws(() => lockDataDir(dir, 'the admin CLI'), /in use by process \d+ \(the server, since .*, in another PID namespace: another container\?, last seen 0 s ago\)/, 'touched just now: refused')
  const past = new Date(Date.now() - STALE_MS - 1000)
  utimesSync(join(dir, LOCK_FILE), past, past)
  const release = lockDataDir(dir, 'the server')
  t.equal(lockOf(dir).pid, process.pid, `not touched for ${STALE_MS / 1000} s: its holder is gone, and the lock is taken over`)
  t.equal((lockOf(dir) as { pid_ns?: string }).pid_ns, pidNamespace(), 'the new lock names its namespace')
  release()
})

t.test('a lock that names no namespace (an older version) holds while its PID lives', async (t) => {
  const dir = dataDir(t)
  writeLock(dir, { pid: process.pid })
  t.throws(() => lockDataDir(dir, 'the admin CLI'), new RegExp(`in use by process ${process.pid} `))
})

t.test('the holder touches its lock while it holds it, and stops when it lets go', async (t) => {
  const dir = dataDir(t)
  const release = lockDataDir(dir, 'the server', { heartbeatMs: 10 })
  const path = join(dir, LOCK_FILE)
  const past = new Date(Date.now() - 60_000)
  utimesSync(path, past, past)
  await settle(() => Date.now() - statSync(path).mtimeMs < 5_000)
  t.pass('touched again')
  release()
  t.throws(() => statSync(path), { code: 'ENOENT' }, 'released: gone')
})

t.test("a lock that stops being this process's while it holds it is reported, so that the holder stops", async (t) => {
  // Found by a review: a server paused past the heartbeat's allowance had its lock taken from
  // another namespace, and carried on writing beside the new holder. The heartbeat runs in a
  // thread of its own (a long statement on the main thread does not stop it) and says when the
  // lock is no longer its own.
  const dir = dataDir(t)
  let lost = 0
  const release = lockDataDir(dir, 'the server', { heartbeatMs: 10, onLost: () => lost++ })
  // A lock it cannot read (half written, or out of file descriptors) is a missed touch, never
  // 'lost' (found by a review: a file-descriptor flood stopped the server).
  writeFileSync(join(dir, LOCK_FILE), '{"pid": 1, "ro')
  const path = join(dir, LOCK_FILE)
  const unreadableSince = statSync(path).mtimeMs
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(lost, 0, 'an unreadable lock: not lost')
  t.equal(statSync(path).mtimeMs, unreadableSince, 'and not touched')
  writeLock(dir, { pid: 1, pid_ns: 'pid:[1]' })
  await settle(() => lost > 0)
  t.equal(lost, 1, 'reported once')
  release()
  t.equal(lockOf(dir).pid, 1, "the other process's lock is left alone")
})
