import type { Database } from '../client.js'

export function testersRepo(db: Database) {
  void db
  return {}
}
