import type { Database } from '../client.js'
import { changelogRepo } from './changelog.js'
import { feedbackRepo } from './feedback.js'
import { idempotencyRepo } from './idempotency.js'
import { outboxRepo } from './outbox.js'
import { portalRepo } from './portal.js'
import { programsRepo } from './programs.js'
import { projectsRepo } from './projects.js'
import { testersRepo } from './testers.js'
import { webhooksRepo } from './webhooks.js'
import { newTransaction, transaction, type Transact } from './transact.js'

/** What a transaction's repositories note for after its commit. */
interface Transaction {
  due: boolean
}

export interface RepoHooks {
  /** Called once a transaction that made webhook deliveries due has committed: the dispatcher wakes (src/webhooks/). */
  deliveriesDue?(): void
}

/**
 * Every query of the service, bound to one database. Handlers reach the database only here.
 * `publicBaseUrl` (PUBLIC_BASE_URL) is part of a tester's representation, and so of its ETag.
 */
export function makeRepos(db: Database, publicBaseUrl?: string, hooks: RepoHooks = {}): Repos {
  return bind(db, publicBaseUrl, hooks, undefined)
}

/**
 * Each repository, as a function that builds it. Building one builds its query shapes (tens of
 * microseconds each, the enrollment's CTE more), and a transaction binds them all anew to its
 * connection, so they are built on first use (`builtOnUse`): a transaction pays for the ones it uses.
 */
function builders(db: Database, publicBaseUrl: string | undefined, hooks: RepoHooks, inTransaction: Transaction | undefined) {
  const transact: Transact = inTransaction ? (work) => work(db) : newTransaction(db)
  // A write that is one statement outside a transaction has committed when it returns.
  const deliveriesDue = inTransaction ? () => (inTransaction.due = true) : () => hooks.deliveriesDue?.()
  return {
    projects: () => projectsRepo(db),
    programs: () => programsRepo(db),
    testers: () => testersRepo(db, publicBaseUrl, deliveriesDue),
    feedback: () => feedbackRepo(db),
    portal: () => portalRepo(db, transact),
    changelog: () => changelogRepo(db, transact),
    idempotency: () => idempotencyRepo(db),
    outbox: () => outboxRepo(db, inTransaction && { due: deliveriesDue }),
    webhooks: () => webhooksRepo(db, inTransaction && { due: deliveriesDue }),
  }
}

type Built<T extends Record<string, () => unknown>> = { [K in keyof T]: ReturnType<T[K]> }

/** An object whose members are made by their builder on first read, then kept. */
function builtOnUse<T extends Record<string, () => unknown>>(build: T): Built<T> {
  const object = {} as Built<T>
  for (const name of Object.keys(build)) {
    Object.defineProperty(object, name, {
      enumerable: true,
      configurable: true,
      get() {
        const value = build[name]!()
        Object.defineProperty(object, name, { value, enumerable: true, writable: true })
        return value
      },
    })
  }
  return object
}

export type Repos = Built<ReturnType<typeof builders>> & {
  /**
   * Runs `work` in one transaction, on repositories bound to it: what it writes, events
   * included (outbox.record), commits together or not at all. Called on a transaction's
   * repositories, it joins that transaction.
   */
  transaction<T>(work: (tx: Repos) => Promise<T>): Promise<T>
}

function bind(db: Database, publicBaseUrl: string | undefined, hooks: RepoHooks, inTransaction: Transaction | undefined): Repos {
  const repos = builtOnUse(builders(db, publicBaseUrl, hooks, inTransaction)) as Repos
  repos.transaction = async <T>(work: (tx: Repos) => Promise<T>): Promise<T> => {
    if (inTransaction) return work(repos)
    const state: Transaction = { due: false }
    const result = await transaction(db, (tx) => work(bind(tx, publicBaseUrl, hooks, state)))
    if (state.due) hooks.deliveriesDue?.()
    return result
  }
  return repos
}
