// Child servers for the benchmark: spawn, wait until they answer, sample their memory from
// /proc, stop them by their own pid.
import { spawn, type ChildProcess } from 'node:child_process'
import { openSync, closeSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/** CPU time (user + system) a live process has used, in ms; undefined once it is gone. */
export function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12]) // utime, stime (fields 14 and 15)
    return ticks * 10 // USER_HZ is 100 on Linux
  } catch {
    return undefined
  }
}

/** VmRSS and VmHWM (peak resident set) of a live process, in bytes; undefined once it is gone. */
export function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
  } catch {
    return undefined
  }
}

export interface Server {
  readonly name: string
  readonly pid: number
  readonly url: string
  readonly logFile: string
  /** Milliseconds from spawn to the first answer of /healthz (or the "listening" log line). */
  readonly coldStartMs: number
  /** Highest VmRSS sampled and VmHWM read so far, bytes. */
  peakRss(): number
  /** Starts recording from now on; the returned function gives the highest VmRSS and the CPU ms used since. */
  window(): () => { rss: number; cpuMs: number }
  stop(): Promise<void>
}

export interface SpawnOptions {
  name: string
  args: string[]
  cwd: string
  env: NodeJS.ProcessEnv
  port: number
  logFile: string
  timeoutMs?: number
}

/** Spawns `node <args>` (the server itself, not a wrapper, so the pid is the server's). */
export async function startServer(options: SpawnOptions): Promise<Server> {
  const out = openSync(options.logFile, 'w')
  const spawnedAt = Date.now()
  const child: ChildProcess = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', out, out],
  })
  closeSync(out)
  const pid = child.pid
  if (pid === undefined) throw new Error(`${options.name}: spawn failed`)
  let exited: string | undefined
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`
  })

  let peak = 0
  const windows = new Set<{ max: number }>()
  const sample = () => {
    const m = memoryOf(pid)
    if (!m) return
    peak = Math.max(peak, m.rss, m.hwm)
    for (const w of windows) w.max = Math.max(w.max, m.rss)
  }
  const sampler = setInterval(sample, 200)
  sampler.unref()

  const url = `http://127.0.0.1:${options.port}`
  const deadline = spawnedAt + (options.timeoutMs ?? 60_000)
  let answeredAt: number | undefined
  while (answeredAt === undefined) {
    if (exited) {
      clearInterval(sampler)
      throw new Error(`${options.name} ${exited} before listening; see ${options.logFile}:\n${tail(options.logFile)}`)
    }
    if (Date.now() > deadline) {
      clearInterval(sampler)
      child.kill('SIGKILL')
      throw new Error(`${options.name} did not answer within ${options.timeoutMs ?? 60_000} ms; see ${options.logFile}`)
    }
    try {
      const response = await fetch(`${url}/healthz`)
      await response.arrayBuffer()
      if (response.ok) answeredAt = Date.now()
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  // Fastify's "Server listening" line carries its own time: closer to the event than a poll.
  const listenedAt = listeningTime(options.logFile)
  const coldStartMs = (listenedAt && listenedAt >= spawnedAt && listenedAt <= answeredAt ? listenedAt : answeredAt) - spawnedAt
  sample()

  return {
    name: options.name,
    pid,
    url,
    logFile: options.logFile,
    coldStartMs,
    peakRss: () => {
      sample()
      return peak
    },
    window() {
      const w = { max: 0 }
      windows.add(w)
      sample()
      const cpuBefore = cpuMsOf(pid) ?? 0
      return () => {
        sample()
        windows.delete(w)
        return { rss: w.max, cpuMs: (cpuMsOf(pid) ?? cpuBefore) - cpuBefore }
      }
    },
    async stop() {
      sample()
      clearInterval(sampler)
      if (exited) return
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      process.kill(pid, 'SIGTERM')
      const timer = setTimeout(() => {
        if (!exited) process.kill(pid, 'SIGKILL')
      }, 15_000)
      await gone
      clearTimeout(timer)
    },
  }
}

function listeningTime(logFile: string): number | undefined {
  try {
    for (const line of readFileSync(logFile, 'utf8').split('\n')) {
      if (!line.includes('Server listening')) continue
      const time = (JSON.parse(line) as { time?: number }).time
      if (typeof time === 'number') return time
    }
  } catch {
    // not JSON (the minimal server logs nothing): fall back on the poll
  }
  return undefined
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n')
  } catch {
    return ''
  }
}
