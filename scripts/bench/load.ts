// The two load generators: autocannon for HTTP, pgbench for the database alone. Both report
// the same figures: completed requests (transactions) a second, p50 and p99 latency in ms.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import autocannon, { type Request } from 'autocannon'

export interface Measure {
  rps: number
  /** Requests (transactions) completed in the measured time. */
  completed: number
  /** Server CPU time per completed request, ms (HTTP runs). */
  cpuPerRequest?: number
  p50: number
  p99: number
  /** Responses other than 2xx, connection errors and timeouts: any of them spoils the figure. */
  failures: number
  detail?: string
}

export interface HttpLoad {
  url: string
  connections: number
  seconds: number
  request: Request
}

export async function runHttp(load: HttpLoad): Promise<Measure> {
  const result = await autocannon({
    url: load.url,
    connections: load.connections,
    duration: load.seconds,
    pipelining: 1,
    timeout: 10,
    requests: [load.request],
  })
  const failures = result.non2xx + result.errors + result.timeouts
  const codes = Object.entries(result.statusCodeStats ?? {})
    .map(([code, s]) => `${code}×${s.count}`)
    .join(' ')
  // Requests still waiting when the time is up are not counted: with none completed there is no latency.
  const completed = result.requests.total > 0
  return {
    rps: result.requests.total / result.duration,
    completed: result.requests.total,
    p50: completed ? result.latency.p50 : NaN,
    p99: completed ? result.latency.p99 : NaN,
    failures,
    ...(failures ? { detail: `status ${codes}; errors ${result.errors}; timeouts ${result.timeouts}` } : {}),
  }
}

export interface PgbenchLoad {
  databaseUrl: string
  scriptFile: string
  clients: number
  threads: number
  seconds: number
  variables: Record<string, string>
  /** Directory for pgbench's per-transaction logs (read for the percentiles, then removed). */
  logDir: string
}

/** pgbench -M prepared; latency percentiles from its per-transaction log (-l), in ms. */
export async function runPgbench(load: PgbenchLoad): Promise<Measure> {
  const prefix = join(load.logDir, `pgbench-${process.pid}-${Date.now()}`)
  const args = [
    '-n',
    '-M', 'prepared',
    '-c', String(load.clients),
    '-j', String(load.threads),
    '-T', String(load.seconds),
    '-f', load.scriptFile,
    '-l', `--log-prefix=${prefix}`,
    ...Object.entries(load.variables).flatMap(([k, v]) => ['-D', `${k}=${v}`]),
    load.databaseUrl,
  ]
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn('pgbench', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let text = ''
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()))
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`pgbench exited with ${code}:\n${text}`))))
  })
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(output)?.[1])
  const failed = Number(/number of failed transactions: (\d+)/.exec(output)?.[1] ?? 0)
  if (!Number.isFinite(tps)) throw new Error(`no tps in pgbench output:\n${output}`)

  const base = prefix.slice(load.logDir.length + 1)
  const files = readdirSync(load.logDir).filter((f) => f.startsWith(base))
  const latencies: number[] = []
  for (const file of files) {
    const path = join(load.logDir, file)
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      // client_id transaction_no time(µs) script_no time_epoch time_us
      const micros = Number(line.split(' ')[2])
      if (Number.isFinite(micros)) latencies.push(micros / 1000)
    }
    rmSync(path)
  }
  latencies.sort((a, b) => a - b)
  return { rps: tps, completed: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failures: failed, ...(failed ? { detail: output } : {}) }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]!
}

export function median(values: number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
