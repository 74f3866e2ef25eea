import { and, count, eq, isNull, sql } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import { apiKeyPrefix, hashApiKey, newApiKey } from '../../domain/secrets.js'
import type { Database } from '../client.js'
import { api_keys, projects } from '../schema.js'

export type ProjectRow = typeof projects.$inferSelect
export type ApiKeyRow = Pick<typeof api_keys.$inferSelect, 'id' | 'prefix' | 'created_at'>
export interface NewProject {
  name: string
  plan: 'free' | 'pro'
  beta_enabled: boolean
}

export function projectsRepo(db: Database) {
  async function insertKey(tx: Database, projectId: string): Promise<{ key: ApiKeyRow; apiKey: string }> {
    const apiKey = newApiKey()
    const [key] = await tx
      .insert(api_keys)
      .values({ id: newId('key'), project_id: projectId, key_hash: hashApiKey(apiKey), prefix: apiKeyPrefix(apiKey) })
      .returning({ id: api_keys.id, prefix: api_keys.prefix, created_at: api_keys.created_at })
    return { key: key!, apiKey }
  }

  const keyLookup = db
    .select({ id: projects.id, plan: projects.plan, beta_enabled: projects.beta_enabled })
    .from(api_keys)
    .innerJoin(projects, eq(projects.id, api_keys.project_id))
    .where(and(eq(api_keys.key_hash, sql.placeholder('keyHash')), isNull(api_keys.revoked_at)))
    .prepare('api_key_lookup')

  return {
    /** Creates a project and its first API key in one transaction. */
    create(input: NewProject): Promise<{ project: ProjectRow; apiKey: string }> {
      return db.transaction(async (tx) => {
        const [project] = await tx.insert(projects).values({ id: newId('prj'), ...input }).returning()
        const { apiKey } = await insertKey(tx as unknown as Database, project!.id)
        return { project: project!, apiKey }
      })
    },

    async get(projectId: string): Promise<ProjectRow | undefined> {
      const [row] = await db.select().from(projects).where(eq(projects.id, projectId))
      return row
    },

    async update(projectId: string, patch: Partial<NewProject>): Promise<ProjectRow | undefined> {
      if (Object.keys(patch).length === 0) return this.get(projectId)
      const [row] = await db.update(projects).set(patch).where(eq(projects.id, projectId)).returning()
      return row
    },

    async createKey(projectId: string): Promise<{ key: ApiKeyRow; apiKey: string } | undefined> {
      if (!(await this.get(projectId))) return undefined
      return insertKey(db, projectId)
    },

    /** Revokes the key; false when the project has no such key. Revoking twice is fine. */
    async revokeKey(projectId: string, keyId: string): Promise<boolean> {
      const [row] = await db
        .update(api_keys)
        .set({ revoked_at: sql`coalesce(${api_keys.revoked_at}, now())` })
        .where(and(eq(api_keys.project_id, projectId), eq(api_keys.id, keyId)))
        .returning({ id: api_keys.id })
      return row !== undefined
    },

    /**
     * The project a live (not revoked) key belongs to. It runs on every request, read from the
     * database each time (operator changes take effect on the very next request, on every
     * instance), so it is built once and runs as a prepared statement.
     */
    async findByKeyHash(keyHash: string): Promise<Pick<ProjectRow, 'id' | 'plan' | 'beta_enabled'> | undefined> {
      const [row] = await keyLookup.execute({ keyHash })
      return row
    },

    async count(): Promise<number> {
      const [row] = await db.select({ n: count() }).from(projects)
      return row!.n
    },
  }
}
