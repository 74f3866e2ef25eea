// The webhook scenarios of the benchmark (issue #15), against a running API server whose
// dispatcher may reach 127.0.0.1 (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true) and the benchmark's fast
// receiver (receiver.ts):
// - deliveryRate: a backlog of deliveries written straight into the database, then how many a
//   second reach the receiver, from the first arrival to the last;
// - writeToDelivery: enrollments sent at a steady rate through the API, each one's delivery
//   matched to the moment the enrollment's 201 had arrived.
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { percentile } from './load.js'
import { now, type BenchReceiver } from './receiver.js'

export interface Api {
  url: string
  key: string
}

async function call(api: Api, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(api.url + path, {
    method,
    headers: { authorization: `Bearer ${api.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} }
}

/** Subscribes the receiver through the API (the project may have at most 10 endpoints). */
export async function subscribe(api: Api, receiver: BenchReceiver, events: string[]): Promise<string> {
  const created = await call(api, 'POST', '/v1/webhook-endpoints', { url: receiver.url, events, description: 'npm run bench' })
  if (created.status !== 201) throw new Error(`creating the benchmark's webhook endpoint answered ${created.status}: ${JSON.stringify(created.json)}`)
  return (created.json.data as { id: string }).id
}

/** Deletes the endpoint, and with it whatever of its deliveries is left. */
export async function unsubscribe(api: Api, endpointId: string): Promise<void> {
  const deleted = await call(api, 'DELETE', `/v1/webhook-endpoints/${endpointId}`)
  if (deleted.status !== 204) throw new Error(`deleting the benchmark's webhook endpoint answered ${deleted.status}`)
}

/** Waits until the receiver has `events` events or `timeoutMs` has passed. */
async function received(receiver: BenchReceiver, events: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while ((await receiver.count()).events < events && Date.now() < deadline) await sleep(20)
}

export interface RateResult {
  /** Deliveries a second, from the first arrival to the last. */
  perSecond: number
  delivered: number
  expected: number
  /** Events that came more than once. */
  duplicates: number
}

/**
 * `count` events and their deliveries to `endpointId`, written in one statement by `write` (so
 * that writing them costs the server nothing), then delivered by the server's dispatcher, which
 * finds them at its next poll.
 */
export async function deliveryRate(options: {
  receiver: BenchReceiver
  count: number
  write: (count: number) => Promise<void>
  timeoutMs: number
}): Promise<RateResult> {
  const { receiver, count } = options
  await receiver.reset()
  await options.write(count)
  await received(receiver, count, options.timeoutMs)
  const times = (await receiver.arrivals()).map((a) => a.at).sort((a, b) => a - b)
  const span = times.length > 1 ? (times.at(-1)! - times[0]!) / 1000 : NaN
  return { perSecond: (times.length - 1) / span, delivered: times.length, expected: count, duplicates: (await receiver.count()).duplicates }
}

export interface LatencyResult {
  /** Writes acknowledged (201) a second, as sent. */
  writesPerSecond: number
  acknowledged: number
  /** Writes that got no 201 (another answer, or an error). */
  failedWrites: number
  /** From a write's 201 arriving to its delivery arriving, ms. */
  p50: number
  p99: number
  max: number
  /** Acknowledged writes whose delivery had not come when the wait ended. */
  undelivered: number
  /** The write's own latency (request sent to 201 read), ms. */
  writeP50: number
  writeP99: number
}

/**
 * Enrollments at `rate` a second for `seconds`, sent on schedule whether or not the earlier ones
 * have been answered (an open loop: a slow server meets the same load, not a lighter one), each
 * with a new email; then waits up to `waitMs` for every acknowledged one's delivery.
 */
export async function writeToDelivery(options: {
  api: Api
  receiver: BenchReceiver
  programId: string
  rate: number
  seconds: number
  waitMs: number
  tag: string
}): Promise<LatencyResult> {
  const { api, receiver, rate, seconds } = options
  await receiver.reset()
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const target = new URL(`${api.url}/v1/beta/programs/${options.programId}/testers`)
  const acks = new Map<string, number>()
  const writeMs: number[] = []
  let failed = 0
  const enroll = (n: number) =>
    new Promise<void>((resolve) => {
      const sent = now()
      const body = JSON.stringify({ email: `hook-${options.tag}-${n}@bench.test` })
      const req = request(
        target,
        { method: 'POST', agent, headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () => {
            const at = now()
            if (res.statusCode === 201) {
              acks.set((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { id: string } }).data.id, at)
              writeMs.push(at - sent)
            } else failed++
            resolve()
          })
        },
      )
      req.on('error', () => {
        failed++
        resolve()
      })
      req.end(body)
    })

  const total = Math.round(rate * seconds)
  const intervalMs = 1000 / rate
  const began = now()
  const writes: Promise<void>[] = []
  for (let n = 0; n < total; n++) {
    const wait = began + n * intervalMs - now()
    if (wait > 1) await sleep(wait)
    writes.push(enroll(n))
  }
  await Promise.all(writes)
  const sentFor = (now() - began) / 1000
  // One event, so one delivery, per acknowledged enrollment.
  await received(receiver, acks.size, options.waitMs)
  agent.destroy()

  const arrivalOf = new Map((await receiver.arrivals()).map((a) => [a.resource, a.at]))
  const latencies: number[] = []
  let undelivered = 0
  for (const [id, ack] of acks) {
    const at = arrivalOf.get(id)
    if (at === undefined) undelivered++
    else latencies.push(at - ack)
  }
  latencies.sort((a, b) => a - b)
  writeMs.sort((a, b) => a - b)
  return {
    writesPerSecond: acks.size / sentFor,
    acknowledged: acks.size,
    failedWrites: failed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? NaN,
    undelivered,
    writeP50: percentile(writeMs, 50),
    writeP99: percentile(writeMs, 99),
  }
}
