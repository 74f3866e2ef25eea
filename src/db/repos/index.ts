import type { Database } from '../client.js'
import { changelogRepo } from './changelog.js'
import { feedbackRepo } from './feedback.js'
import { idempotencyRepo } from './idempotency.js'
import { portalRepo } from './portal.js'
import { programsRepo } from './programs.js'
import { projectsRepo } from './projects.js'
import { testersRepo } from './testers.js'

/**
 * Every query of the service, bound to one database. Handlers reach the database only here.
 * `publicBaseUrl` (PUBLIC_BASE_URL) is part of a tester's representation, and so of its ETag.
 */
export function makeRepos(db: Database, publicBaseUrl?: string) {
  return {
    projects: projectsRepo(db),
    programs: programsRepo(db),
    testers: testersRepo(db, publicBaseUrl),
    feedback: feedbackRepo(db),
    portal: portalRepo(db),
    changelog: changelogRepo(db),
    idempotency: idempotencyRepo(db),
  }
}

export type Repos = ReturnType<typeof makeRepos>
