// The embedded database's lock (contract §9): a live holder refuses a second opener; a lock whose
// process is gone is taken over, and so is one whose PID a later process got (found by a
// newcomer review: a container's server is PID 1 after every restart, and was refused its own
// data directory by the lock of its killed predecessor, PID 1 too).
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { LOCK_FILE, lockDataDir, processStart } from '../../src/db/data-dir-lock.js'

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
  writeLock(dir, { pid: process.pid, process_start: 'an-earlier-boot/12345' })
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
