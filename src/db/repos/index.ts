import type { Database } from '../client.js'
import { changelogRepo } from './changelog.js'
import { feedbackRepo } from './feedback.js'
import { idempotencyRepo } from './idempotency.js'
import { outboxRepo, type RecordedEvent } from './outbox.js'
import { portalRepo } from './portal.js'
import { programsRepo } from './programs.js'
import { projectsRepo } from './projects.js'
import { testersRepo } from './testers.js'

export interface RepoHooks {
  /** Called once a transaction that recorded events has committed (the dispatcher wakes, src/webhooks/). */
  eventsCommitted?(events: readonly RecordedEvent[]): void
}

/**
 * Every query of the service, bound to one database. Handlers reach the database only here.
 * `publicBaseUrl` (PUBLIC_BASE_URL) is part of a tester's representation, and so of its ETag.
 */
export function makeRepos(db: Database, publicBaseUrl?: string, hooks: RepoHooks = {}): Repos {
  return bind(db, publicBaseUrl, hooks, undefined)
}

function queries(db: Database, publicBaseUrl: string | undefined, inTransaction: RecordedEvent[] | undefined) {
  return {
    projects: projectsRepo(db),
    programs: programsRepo(db),
    testers: testersRepo(db, publicBaseUrl),
    feedback: feedbackRepo(db),
    portal: portalRepo(db),
    changelog: changelogRepo(db),
    idempotency: idempotencyRepo(db),
    outbox: outboxRepo(db, inTransaction && { recorded: (event) => inTransaction.push(event) }),
  }
}

export type Repos = ReturnType<typeof queries> & {
  /**
   * Runs `work` in one transaction, on repositories bound to it: what it writes, events
   * included (outbox.record), commits together or not at all. Called on a transaction's
   * repositories, it joins that transaction.
   */
  transaction<T>(work: (tx: Repos) => Promise<T>): Promise<T>
}

function bind(db: Database, publicBaseUrl: string | undefined, hooks: RepoHooks, inTransaction: RecordedEvent[] | undefined): Repos {
  const repos: Repos = {
    ...queries(db, publicBaseUrl, inTransaction),
    async transaction<T>(work: (tx: Repos) => Promise<T>): Promise<T> {
      if (inTransaction) return work(repos)
      const recorded: RecordedEvent[] = []
      const result = await db.transaction((tx) => work(bind(tx as unknown as Database, publicBaseUrl, hooks, recorded)))
      if (recorded.length) hooks.eventsCommitted?.(recorded)
      return result
    },
  }
  return repos
}
