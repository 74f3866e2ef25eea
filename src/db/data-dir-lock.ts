// The embedded database belongs to one process. PGlite runs PostgreSQL inside the process that
// opens it: a second process opening the same data directory (the CLI while the server runs, a
// second server) does not share the first one's database, it silently works on its own copy of
// the files, and whichever closes last overwrites the other's writes. So the data directory
// carries a lock file naming its holder's PID, created exclusively; a second opener refuses at
// once, before PGlite touches a file. A lock whose process no longer exists (the holder was
// killed, the machine restarted) is stale and taken over, so a crash never locks anybody out.
//
// A PID means something only in its own PID namespace, and two containers sharing a volume each
// have their own (both servers may be PID 1). So on Linux the lock also records its holder's PID
// namespace and when the process started, and its holder touches it every HEARTBEAT_MS:
// - in this process's namespace, the holder is alive when its PID runs and started when the lock
//   says (a later process that got the same PID does not pass for it);
// - in another namespace nothing can be checked but the heartbeat: the holder is alive while the
//   lock was touched within STALE_MS (a container restarted on the volume takes the lock over
//   that long after its predecessor died; until then its start is refused);
// - a lock that records no namespace (written before it did, or off Linux): its PID alive.
import { linkSync, readFileSync, readlinkSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { SetupError } from '../config.js'

export const LOCK_FILE = 'feedback-service.lock'

interface Holder {
  pid: number
  /** What holds it, for the message: "the server", "the admin CLI". */
  role: string
  started_at: string
  /** The kernel's boot and the process's start time in clock ticks since it (Linux); absent elsewhere. */
  process_start?: string
  /** The holder's PID namespace, `pid:[<inode>]` (Linux); absent elsewhere. */
  pid_ns?: string
}

/** How often a holder touches its lock. */
export const HEARTBEAT_MS = 5_000
/** How long after its last touch a lock from another PID namespace is taken for its holder's. */
export const STALE_MS = 30_000

/** This process's PID namespace (Linux), to tell a PID of ours from another container's. */
export function pidNamespace(): string | undefined {
  try {
    return readlinkSync('/proc/self/ns/pid')
  } catch {
    return undefined
  }
}

/** The data directories this process holds: its own PID in a lock is stale unless listed here. */
const held = new Set<string>()

/**
 * What tells a process from a later one with the same PID, on Linux: the kernel's boot id and the
 * process's start time (field 22 of /proc/<pid>/stat, in clock ticks since boot). Undefined where
 * there is no /proc, or no such process.
 */
export function processStart(pid: number): string | undefined {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The fields after the command name, which is in parentheses and may hold spaces: the third field first.
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
    return ticks ? `${boot}/${ticks}` : undefined
  } catch {
    return undefined
  }
}

/** Whether the process the lock names still runs, and is the one that took it (see the top of the file). */
function holds(holder: Holder, path: string, touchedMsAgo: number): boolean {
  if (holder.pid <= 0) return false
  const ours = pidNamespace()
  if (holder.pid_ns !== undefined && ours !== undefined && holder.pid_ns !== ours) return touchedMsAgo < STALE_MS
  if (holder.pid_ns !== undefined && holder.pid === process.pid) return held.has(path)
  if (holder.process_start !== undefined) {
    const start = processStart(holder.pid)
    if (start !== undefined) return start === holder.process_start
  }
  return isAlive(holder.pid)
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** When the lock was last touched (its holder's heartbeat), in ms since the epoch; 0 when it is gone. */
function touchedAt(path: string): number {
  try {
    return statSync(path).mtimeMs
  } catch {
    return 0
  }
}

function readHolder(path: string): Holder | undefined {
  try {
    const holder = JSON.parse(readFileSync(path, 'utf8')) as Holder
    return Number.isInteger(holder.pid) ? holder : undefined
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    // Unreadable or half written (its writer died mid-write): nobody can be shown to hold it.
    return { pid: -1, role: 'an unknown process', started_at: '' }
  }
}

/**
 * The heartbeat, in a thread of its own: the embedded database runs its statements on the main
 * thread, and one that runs long must not stop the touches (found by a review: a lock untouched
 * for 30 s is taken over from another namespace). It says 'lost' when the lock is no longer this
 * process's (taken over while the whole process was paused, say).
 */
const HEARTBEAT_THREAD = `
const { parentPort, workerData } = require('node:worker_threads')
const { readFileSync, utimesSync } = require('node:fs')
// Lost only when the lock is shown to be gone or another's: a read that fails otherwise (out of
// file descriptors, say) is a missed touch, not a reason to stop the server.
setInterval(() => {
  let holder
  try {
    holder = JSON.parse(readFileSync(workerData.path, 'utf8'))
  } catch (error) {
    if (error.code === 'ENOENT') parentPort.postMessage('lost')
    return
  }
  if (holder.pid !== workerData.pid || holder.started_at !== workerData.startedAt) return parentPort.postMessage('lost')
  try {
    const now = new Date()
    utimesSync(workerData.path, now, now)
  } catch {}
}, workerData.intervalMs)
`

/**
 * Takes the data directory's lock for this process, or throws SetupError naming the holder.
 * Returns the function that releases it. `onLost` is called if the lock stops being this
 * process's while it holds it: by then another process may have opened the database, and this
 * one must stop writing to it (the server stops).
 */
export function lockDataDir(dataDir: string, role: string, { heartbeatMs = HEARTBEAT_MS, onLost = () => {} }: { heartbeatMs?: number; onLost?: () => void } = {}): () => void {
  const path = join(dataDir, LOCK_FILE)
  const mine: Holder = { pid: process.pid, role, started_at: new Date().toISOString(), process_start: processStart(process.pid), pid_ns: pidNamespace() }
  const content = `${JSON.stringify(mine)}\n`
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      writeFileSync(path, content, { flag: 'wx' })
      held.add(path)
      const ours = () => {
        const holder = readHolder(path)
        return holder?.pid === process.pid && holder.started_at === mine.started_at
      }
      // The heartbeat, for an opener in another PID namespace, which cannot see this process.
      const heartbeat = new Worker(HEARTBEAT_THREAD, { eval: true, workerData: { path, pid: process.pid, startedAt: mine.started_at, intervalMs: heartbeatMs } })
      let lost = false
      heartbeat.on('message', () => {
        if (lost || !held.has(path)) return
        lost = true
        onLost()
      })
      // A thread that cannot start (a preload it does not allow) leaves the lock untouched, which
      // another namespace's opener reads as a holder gone: never a crash of this process.
      heartbeat.on('error', () => {})
      // After the listeners, which would otherwise keep the process alive.
      heartbeat.unref()
      const release = () => {
        void heartbeat.terminate()
        if (ours()) unlinkSync(path)
        held.delete(path)
        process.off('exit', release)
      }
      // A process that exits without closing the database (an uncaught error) leaves no lock behind.
      process.on('exit', release)
      return release
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      // A read-only file system, a directory this process may not write, a full disk: one line,
      // not a stack trace (found by a newcomer's review).
      if (code !== 'EEXIST') throw new SetupError(`DATA_DIR ${dataDir} cannot hold the embedded database (${code ?? (error as Error).message}: read-only, not writable by this process, or full): fix it.`)
    }
    const holder = readHolder(path)
    if (!holder) continue
    const touchedMsAgo = Date.now() - touchedAt(path)
    if (holds(holder, path, touchedMsAgo)) {
      const elsewhere = holder.pid_ns !== undefined && holder.pid_ns !== pidNamespace()
      throw new SetupError(
        `The embedded database in ${dataDir} is in use by process ${holder.pid} (${holder.role}, since ${holder.started_at}` +
          (elsewhere ? `, in another PID namespace: another container?, last seen ${Math.round(touchedMsAgo / 1000)} s ago` : '') +
          `): stop it first, or act on the running server through the operator API (ADMIN_TOKEN); ` +
          (elsewhere ? `if it is gone, its lock is taken over ${STALE_MS / 1000} s after it was last seen.` : `if no such process runs, delete ${path}.`),
      )
    }
    // Stale. Move it aside atomically and check that what moved is the lock judged stale: if a
    // process took the lock over in between, what moved is its live lock, which goes back.
    const aside = `${path}.stale-${process.pid}`
    try {
      renameSync(path, aside)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw error
    }
    const moved = readHolder(aside)
    if (moved && JSON.stringify(moved) !== JSON.stringify(holder)) {
      try {
        linkSync(aside, path)
      } catch {
        // Another process has taken the lock meanwhile; the next attempt reads it.
      }
    }
    unlinkSync(aside)
  }
  throw new SetupError(`Could not take the lock on the embedded database in ${dataDir} (${path}); try again.`)
}
