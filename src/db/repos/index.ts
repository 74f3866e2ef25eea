import type { Database } from '../client.js'
import { projectsRepo } from './projects.js'

/** Every query of the service, bound to one database. Handlers reach the database only here. */
export function makeRepos(db: Database) {
  return {
    projects: projectsRepo(db),
  }
}

export type Repos = ReturnType<typeof makeRepos>
