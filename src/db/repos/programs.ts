import type { Database } from '../client.js'

export function programsRepo(db: Database) {
  void db
  return {}
}
