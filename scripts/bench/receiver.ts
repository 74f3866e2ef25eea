// The benchmark's webhook receiver: node:http on 127.0.0.1, answering 204 the moment a delivery's
// body has arrived, and noting when each event came (the clock of `now()` below, the load
// generator's) and which resource it was about, so that a write's acknowledgement can be matched
// to its delivery. Nothing is verified: it measures the sender, not itself.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Milliseconds on a clock every part of the benchmark process shares (sub-millisecond). */
export const now = () => performance.timeOrigin + performance.now()

export interface Arrival {
  /** now() when the body had arrived. */
  at: number
  /** The event's `data.id`: the resource the event is about (a tester's `bt_...`). */
  resource: string
}

export interface BenchReceiver {
  /** http://127.0.0.1:<port>/hook */
  url: string
  /** First arrival of each event id (a delivery made again is counted in `duplicates`). */
  arrivals: Map<string, Arrival>
  duplicates(): number
  /** Forgets what arrived. */
  reset(): void
  close(): Promise<void>
}

export async function startBenchReceiver(): Promise<BenchReceiver> {
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
      else arrivals.set(event.id, { at, resource: String(event.data.id ?? '') })
    })
  })
  // Longer than the sender keeps an idle connection (15 s), so that it never reuses one this side
  // has just closed.
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrivals,
    duplicates: () => duplicates,
    reset() {
      arrivals.clear()
      duplicates = 0
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
