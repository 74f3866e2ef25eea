// The event log keeps 30 days (api-contract §10): older events, and their deliveries with them
// (a cascading key), are deleted by every instance, in small batches, each its own short
// statement, so that no delete holds many rows' locks for long or blocks the writes that add
// events; instances pruning at once skip each other's rows instead of waiting for them.
import type { FastifyBaseLogger } from 'fastify'
import type { Repos } from '../db/repos/index.js'
import { periodic, type PeriodicJob } from './periodic.js'

/** How often an instance prunes: events outlive their 30 days by at most this. */
export const PRUNE_EVERY_MS = 10 * 60_000
/** Events deleted per statement (each with its deliveries: at most one per endpoint, ten per project). */
export const PRUNE_BATCH = 500
/** The first pruning after start: not in the way of a starting instance. */
const FIRST_PRUNE_MS = 60_000

export interface EventPruningOptions {
  repos: Repos
  log: Pick<FastifyBaseLogger, 'warn' | 'info'>
  intervalMs?: number
  batch?: number
}

/** `runOnce()` resolves to the number of events it deleted. */
export function eventPruning(options: EventPruningOptions): PeriodicJob<number> {
  const batch = options.batch ?? PRUNE_BATCH
  let stopping = false
  const job = periodic({
    name: 'event pruning',
    intervalMs: options.intervalMs ?? PRUNE_EVERY_MS,
    firstDelayMs: FIRST_PRUNE_MS,
    log: options.log,
    async run() {
      let deleted = 0
      for (;;) {
        const count = await options.repos.outbox.pruneExpired(batch)
        deleted += count
        // A batch short of full: nothing older is left (but what another instance holds).
        if (count < batch || stopping) return deleted
      }
    },
  })
  return {
    ...job,
    start() {
      stopping = false
      job.start()
    },
    async stop() {
      stopping = true
      await job.stop()
    },
  }
}
