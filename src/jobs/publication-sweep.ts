// Scheduled publication (api-contract §10): a scheduled changelog entry becomes visible when its
// published_at passes, with no job involved (reads compare published_at <= now()); this sweep
// only announces it, writing `changelog_entry.published` within 60 s of that moment. No timer per
// entry: every instance sweeps every few seconds, claiming the entries whose time has come and
// that no event has announced (announced_at, schema.ts), a bounded batch per transaction, so a
// publication fires once however many instances sweep at once. The writes that publish an entry
// at once announce it themselves, in their own transaction (handlers/changelog.ts); one that
// unpublishes or reschedules it clears announced_at, so it fires at its new time, or never.
import { changelogRecord } from '../handlers/records.js'
import { inBatches, periodic, type BatchJobOptions, type PeriodicJob } from './periodic.js'

/** Between sweeps: an entry is announced within this (and a sweep's own time) of its published_at; the contract allows 60 s. */
export const PUBLICATION_SWEEP_MS = 5_000
/** Entries announced per transaction: each holds its rows' locks for as long as its events take to write. */
export const PUBLICATION_BATCH = 50

/** `runOnce()` resolves to the number of entries it announced. */
export function publicationSweep(options: BatchJobOptions): PeriodicJob<number> {
  const batch = options.batch ?? PUBLICATION_BATCH

  /** One batch, in one transaction: the entries claimed and their events commit together. */
  const announceBatch = () =>
    options.repos.transaction(async (tx) => {
      const due = await tx.changelog.announceDue(batch)
      // The entry as GET /v1/changelog/{id} returns it now: its base locale, status published.
      for (const entry of due) await tx.outbox.record(entry.project_id, 'changelog_entry.published', changelogRecord(entry))
      return due.length
    })

  return periodic({
    name: 'the publication sweep',
    intervalMs: options.intervalMs ?? PUBLICATION_SWEEP_MS,
    log: options.log,
    run: (stopping) => inBatches(announceBatch, batch, stopping),
  })
}
