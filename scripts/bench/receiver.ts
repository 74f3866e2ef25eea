// The benchmark's webhook receiver: node:http on 127.0.0.1, answering 204 the moment a delivery's
// body has arrived, and noting when each event came and which resource it was about, so that a
// write's acknowledgement can be matched to its delivery. Nothing is verified: it measures the
// sender, not itself.
//
// It runs in a process of its own (npm run build compiles it to dist/ beside the minimal server),
// so that answering deliveries never takes the load generator's thread; the benchmark asks it
// over IPC for what arrived. Times are `now()` below in both processes: the wall clock's origin
// plus a monotonic offset, the same clock on one machine (sub-millisecond).
import { fork, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'

/** Milliseconds on the clock the benchmark's processes share. */
export const now = () => performance.timeOrigin + performance.now()

export interface Arrival {
  event: string
  /** now() when the body had arrived. */
  at: number
  /** The event's `data.id`: the resource the event is about (a tester's `bt_...`). */
  resource: string
}

export interface BenchReceiver {
  /** http://127.0.0.1:<port>/hook */
  url: string
  /** Events arrived (each once), and how many came more than once. */
  count(): Promise<{ events: number; duplicates: number }>
  /** The first arrival of each event. */
  arrivals(): Promise<Arrival[]>
  /** Forgets what arrived. */
  reset(): Promise<void>
  close(): Promise<void>
}

type Request = { id: number; op: 'count' | 'arrivals' | 'reset' }
type Reply = { id: number; value: unknown }

/** In the child: the server, and answers to the parent's questions. */
async function serve(): Promise<void> {
  const arrivals = new Map<string, Arrival>()
  let duplicates = 0
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const at = now()
      response.writeHead(204).end()
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; data: { id?: string } }
      if (arrivals.has(event.id)) duplicates++
      else arrivals.set(event.id, { event: event.id, at, resource: String(event.data.id ?? '') })
    })
  })
  // Longer than the sender keeps an idle connection (15 s), so that it never reuses one this side
  // has just closed.
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  process.on('message', ({ id, op }: Request) => {
    let value: unknown
    if (op === 'count') value = { events: arrivals.size, duplicates }
    else if (op === 'arrivals') value = [...arrivals.values()]
    else {
      arrivals.clear()
      duplicates = 0
    }
    process.send!({ id, value } satisfies Reply)
  })
  process.on('disconnect', () => process.exit(0))
  process.send!({ id: 0, value: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` } satisfies Reply)
}

/** Starts the receiver's process from `compiled` (this file, built to dist/). */
export async function startBenchReceiver(compiled: string): Promise<BenchReceiver> {
  const child: ChildProcess = fork(compiled, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const waiting = new Map<number, (value: unknown) => void>()
  let next = 1
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`the receiver exited with ${code} before listening`)))
    waiting.set(0, (value) => resolve(value as string))
    child.on('message', ({ id, value }: Reply) => {
      waiting.get(id)?.(value)
      waiting.delete(id)
    })
  })
  const ask = <T>(op: Request['op']) =>
    new Promise<T>((resolve) => {
      const id = next++
      waiting.set(id, (value) => resolve(value as T))
      child.send({ id, op } satisfies Request)
    })
  return {
    url,
    count: () => ask('count'),
    arrivals: () => ask('arrivals'),
    reset: () => ask('reset'),
    async close() {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.disconnect()
      await gone
    },
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) await serve()
