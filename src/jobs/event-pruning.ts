// The event log keeps EVENT_LOG_DAYS, 30 (api-contract §10): older events, and their deliveries with them
// (a cascading key), are deleted by every instance, in small batches, each its own short
// statement, so that no delete holds many rows' locks for long or blocks the writes that add
// events; instances pruning at once skip each other's rows instead of waiting for them. Each run
// also clears the previous secrets whose 24 hours after a rotation are over (no delivery is
// signed with one any more, so none is kept), removes the deliveries of deleted endpoints, which
// nothing shows since their DELETE, and the Idempotency-Key records past their 24 hours.
import type { Repos } from '../db/repos/index.js'
import type { DeliveryPosition } from '../db/repos/webhooks.js'
import { inBatches, periodic, type BatchJobOptions, type PeriodicJob } from './periodic.js'

/** How often an instance prunes: events outlive their EVENT_LOG_DAYS by at most this. */
export const PRUNE_EVERY_MS = 10 * 60_000
/** Events deleted per statement (each with its deliveries: at most one per endpoint, ten per project). */
export const PRUNE_BATCH = 500
/** The first pruning after start: not in the way of a starting instance. */
const FIRST_PRUNE_MS = 60_000

/**
 * Deletes the deliveries of deleted endpoints, endpoint by endpoint, in batches that each start
 * where the one before ended; returns how many.
 */
async function purgeDeletedEndpoints(repos: Repos, batch: number, stopping: () => boolean): Promise<number> {
  let total = 0
  for (const endpointId of await repos.webhooks.deletedWithDeliveries()) {
    let before: DeliveryPosition | undefined
    total += await inBatches(
      async () => {
        const { deleted, last } = await repos.webhooks.purgeDeliveriesOf(endpointId, before, batch)
        before = last
        return deleted
      },
      batch,
      stopping,
    )
    if (stopping()) break
  }
  return total
}

/** `runOnce()` resolves to the number of events it deleted (the secrets, deliveries and Idempotency-Key records it removed are not counted). */
export function eventPruning(options: BatchJobOptions): PeriodicJob<number> {
  const batch = options.batch ?? PRUNE_BATCH
  return periodic({
    name: 'event pruning',
    intervalMs: options.intervalMs ?? PRUNE_EVERY_MS,
    firstDelayMs: FIRST_PRUNE_MS,
    log: options.log,
    run: async (stopping) => {
      await inBatches(() => options.repos.webhooks.clearExpiredSecrets(batch), batch, stopping)
      await purgeDeletedEndpoints(options.repos, batch, stopping)
      await inBatches(() => options.repos.idempotency.purgeExpired(batch), batch, stopping)
      return inBatches(() => options.repos.outbox.pruneExpired(batch), batch, stopping)
    },
  })
}
