import type { Database } from '../client.js'

export function changelogRepo(db: Database) {
  void db
  return {}
}
