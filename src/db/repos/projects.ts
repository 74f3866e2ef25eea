import { and, count, eq, sql } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import { newId } from '../../domain/ids.js'
import { apiKeyPrefix, hashApiKey, newApiKey } from '../../domain/secrets.js'
import type { Database } from '../client.js'
import { api_key_deferred_uses, api_keys, cursorOwnerOf, projects } from '../schema.js'
import { descNullsLast } from './order.js'
import { pageValues, rowsAfter, type PageOptions } from './page.js'
import { liveKey } from './scope.js'
import { transaction } from './transact.js'
import { rowsOf, sqlState } from '../results.js'

export type ProjectRow = typeof projects.$inferSelect
export interface NewProject {
  name: string
  plan: 'free' | 'pro'
  beta_enabled: boolean
}

/** What an operator sees of a key: never its hash. */
const keyColumns = {
  id: api_keys.id,
  prefix: api_keys.prefix,
  name: api_keys.name,
  created_at: api_keys.created_at,
  expires_at: api_keys.expires_at,
  last_used_at: api_keys.last_used_at,
  revoked_at: api_keys.revoked_at,
}
export type ApiKeyRow = Pick<typeof api_keys.$inferSelect, keyof typeof keyColumns>
/** What an operator may set on a key; absent fields are left as they are, null clears. */
export type ApiKeyFields = Partial<Pick<ApiKeyRow, 'name' | 'expires_at'>>

/** One key's latest accepted request, as an instance saw it (http/key-usage.ts). */
export interface KeyUse {
  keyHash: string
  usedAt: Date
}

/**
 * What recordKeyUse did: the keys it wrote; those still to be written, each with when it may be;
 * and those whose use was too close to the stored one to be written (dropped), each with when a
 * use could be written at the soonest: no use before then needs a statement.
 */
export interface KeyUseWrite {
  written: string[]
  pending: { keyHash: string; inMs: number }[]
  notDue: { keyHash: string; inMs: number }[]
}

/** When a row another writer held is tried again: that writer has just written it, so the next try learns its minute. */
const HELD_ROW_RETRY_MS = 1000

/** Key uses as the JSON that json_to_recordset reads in recordKeyUse and deferKeyUses. */
const usesJson = (uses: KeyUse[]) => JSON.stringify(uses.map((u) => ({ key_hash: u.keyHash, used_at: u.usedAt.toISOString() })))

/** The project of a live API key, by the key's hash: the guard's lookup. */
function buildKeyLookup(db: Database) {
  return db
    .select({ id: projects.id, plan: projects.plan, beta_enabled: projects.beta_enabled })
    .from(api_keys)
    .innerJoin(projects, eq(projects.id, api_keys.project_id))
    .where(liveKey(sql.placeholder('keyHash')))
    .prepare('api_key_lookup')
}

export function projectsRepo(db: Database) {
  async function insertKey(tx: Database, projectId: string, fields: ApiKeyFields = {}): Promise<{ key: ApiKeyRow; apiKey: string }> {
    const apiKey = newApiKey()
    const [key] = await tx
      .insert(api_keys)
      .values({ id: newId('key'), project_id: projectId, key_hash: hashApiKey(apiKey), prefix: apiKeyPrefix(apiKey), ...fields })
      .returning(keyColumns)
    return { key: key!, apiKey }
  }

  // Built on first use and kept: most transactions never look a key up.
  let keyLookup: ReturnType<typeof buildKeyLookup> | undefined

  /** Every project, newest first, in the order of projects_created_idx (an EXPLAIN test holds it). */
  const listQuery = (options: PageOptions) => {
    const page = pageValues(options)
    return db
      .select()
      .from(projects)
      .where(rowsAfter(projects.created_at, projects.id, page.after))
      .orderBy(descNullsLast(projects.created_at), descNullsLast(projects.id))
      .limit(page.limit)
      .offset(page.offset)
  }

  /** The project's keys, revoked ones included, newest first, in the order of api_keys_project_created_idx. */
  const listKeysQuery = (projectId: string, options: PageOptions) => {
    const page = pageValues(options)
    return db
      .select(keyColumns)
      .from(api_keys)
      .where(and(eq(api_keys.project_id, projectId), rowsAfter(api_keys.created_at, api_keys.id, page.after)))
      .orderBy(descNullsLast(api_keys.created_at), descNullsLast(api_keys.id))
      .limit(page.limit)
      .offset(page.offset)
  }

  async function get(projectId: string): Promise<ProjectRow | undefined> {
    const [row] = await db.select().from(projects).where(eq(projects.id, projectId))
    return row
  }

  async function getKey(projectId: string, keyId: string): Promise<ApiKeyRow | undefined> {
    const [row] = await db
      .select(keyColumns)
      .from(api_keys)
      .where(and(eq(api_keys.project_id, projectId), eq(api_keys.id, keyId)))
    return row
  }

  return {
    listQuery,
    listKeysQuery,
    get,
    /** One key of the project, revoked or not; undefined when the project has no such key. */
    getKey,

    /** Creates a project and its first API key in one transaction. */
    create(input: NewProject): Promise<{ project: ProjectRow; apiKey: string }> {
      return transaction(db, async (tx) => {
        const [project] = await tx.insert(projects).values({ id: newId('prj'), ...input }).returning()
        const { apiKey } = await insertKey(tx, project!.id)
        return { project: project!, apiKey }
      })
    },

    /** `limit` projects from `offset` or after a row, newest first; the caller asks for one more than a page. */
    list: listQuery as (options: PageOptions) => Promise<ProjectRow[]>,

    async update(projectId: string, patch: Partial<NewProject>): Promise<ProjectRow | undefined> {
      if (Object.keys(patch).length === 0) return get(projectId)
      // A new name changes every public page and feed (changelog.ts, publicChanged).
      const renamed = patch.name === undefined ? {} : { public_changed_at: sql`case when ${projects.name} is distinct from ${patch.name} then now() else ${projects.public_changed_at} end` }
      const [row] = await db
        .update(projects)
        .set({ ...patch, ...renamed })
        .where(eq(projects.id, projectId))
        .returning()
      return row
    },

    /** The project's keys like list(); undefined when there is no such project. */
    async listKeys(projectId: string, options: PageOptions): Promise<ApiKeyRow[] | undefined> {
      const rows = await listKeysQuery(projectId, options)
      if (rows.length > 0) return rows
      // Every project has had a key since its creation, but a page beyond the end is empty too.
      return (await get(projectId)) ? rows : undefined
    },

    /** Issues a key; undefined when there is no such project (the foreign key decides, no read first). */
    async createKey(projectId: string, fields: ApiKeyFields = {}): Promise<{ key: ApiKeyRow; apiKey: string } | undefined> {
      try {
        return await insertKey(db, projectId, fields)
      } catch (error) {
        // foreign_key_violation: the project does not exist (or was deleted meanwhile).
        if (sqlState(error) === '23503') return undefined
        throw error
      }
    },

    /** Sets the key's name or expiry; undefined when the project has no such key. Revoked keys may be edited (for the record). */
    async updateKey(projectId: string, keyId: string, fields: ApiKeyFields): Promise<ApiKeyRow | undefined> {
      if (Object.keys(fields).length === 0) return getKey(projectId, keyId)
      const [row] = await db
        .update(api_keys)
        .set(fields)
        .where(and(eq(api_keys.project_id, projectId), eq(api_keys.id, keyId)))
        .returning(keyColumns)
      return row
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
     * The project a live key (neither revoked nor expired) belongs to. It runs on every request,
     * read from the database each time (operator changes take effect on the very next request,
     * on every instance), so it is built once and runs as a prepared statement.
     */
    async findByKeyHash(keyHash: string): Promise<Pick<ProjectRow, 'id' | 'plan' | 'beta_enabled'> | undefined> {
      const [row] = await (keyLookup ??= buildKeyLookup(db)).execute({ keyHash })
      return row
    },

    /**
     * Whether the cursor owner tag `owner` names a key (revoked and expired ones included) of the
     * project of the key with this hash: what a cursor given to another key is checked against
     * (handlers/pagination.ts). One indexed lookup, however many keys the project has had.
     */
    async sameProjectOwner(keyHash: string, owner: string): Promise<boolean> {
      const other = alias(api_keys, 'other')
      const [row] = await db
        .select({ id: other.id })
        .from(other)
        .innerJoin(api_keys, eq(api_keys.project_id, other.project_id))
        .where(and(eq(cursorOwnerOf(other.key_hash), owner), eq(api_keys.key_hash, keyHash)))
        .limit(1)
      return row !== undefined
    },

    /**
     * Writes each key's latest use, in one statement for all of them, where it is due: a minute
     * or more after the stored one, and the key's row not written in the last minute by the
     * database's clock (whichever instance wrote it). A use less than a minute after the stored
     * one is not written: the stored value is within a minute of it already, and writing it
     * would start the row's minute with a value that old, which the key's next uses could then
     * not replace for a minute (a review saw the value two minutes behind a key in use; contract
     * §9: correct to within a minute, written at most once a minute). Rows another instance is writing at that moment are
     * skipped, not waited for (SKIP LOCKED), so two flushes never wait on, or deadlock with,
     * each other; such a row has just been written, so it was not due anyway. `pending` names
     * the uses that are due but for the row's minute, which is not over,
     * each with the milliseconds until its row's minute is over by the database's clock (a second
     * for a row that was held by another writer): the caller keeps them and tries again then.
     */
    async recordKeyUse(uses: KeyUse[]): Promise<KeyUseWrite> {
      if (uses.length === 0) return { written: [], pending: [], notDue: [] }
      const json = usesJson(uses)
      const result = await db.execute(sql`
        with used as (
          select key_hash, used_at from json_to_recordset(${json}::json) as u(key_hash text, used_at timestamptz)
        ), due as (
          select k.id, u.used_at from ${api_keys} k join used u on u.key_hash = k.key_hash
          where (k.last_used_at is null or k.last_used_at <= u.used_at - interval '1 minute')
            and (k.last_used_written_at is null or k.last_used_written_at <= now() - interval '1 minute')
          for update of k skip locked
        ), written as (
          update ${api_keys} k set last_used_at = due.used_at, last_used_written_at = now()
          from due where k.id = due.id
          returning k.key_hash
        )
        select u.key_hash, w.key_hash is not null as written,
          k.last_used_at is null or k.last_used_at <= u.used_at - interval '1 minute' as due,
          -- When the row's minute is over, and when a use would be a minute after the stored one.
          greatest(
            case when k.last_used_written_at > now() - interval '1 minute'
              then ceil(extract(epoch from k.last_used_written_at + interval '1 minute' - now()) * 1000)::int
              else 0 end,
            case when k.last_used_at > u.used_at - interval '1 minute'
              then ceil(extract(epoch from k.last_used_at + interval '1 minute' - now()) * 1000)::int
              else 0 end
          ) as in_ms
        from used u join ${api_keys} k on k.key_hash = u.key_hash left join written w on w.key_hash = u.key_hash
        where k.last_used_at is null or k.last_used_at < u.used_at`)
      const rows = rowsOf<{ key_hash: string; written: boolean; due: boolean; in_ms: number }>(result)
      /** Held until in_ms, or `atLeast` when that has passed. */
      const heldFor = (atLeast: number) => (r: { key_hash: string; in_ms: number }) => ({ keyHash: r.key_hash, inMs: Number(r.in_ms) > 0 ? Number(r.in_ms) : atLeast })
      return {
        written: rows.filter((r) => r.written).map((r) => r.key_hash),
        // Due, its minute over, and not written: another writer held the row (SKIP LOCKED).
        pending: rows.filter((r) => !r.written && r.due).map(heldFor(HELD_ROW_RETRY_MS)),
        notDue: rows.filter((r) => !r.due).map(heldFor(0)),
      }
    },

    /**
     * Hands over uses that an instance that is stopping could not write (recordKeyUse's
     * `pending`), for the next flush of any instance to take back (takeDeferredKeyUses): one row
     * per key, its latest use. This writes no api_keys row, so the minute between writes holds.
     */
    async deferKeyUses(uses: KeyUse[]): Promise<void> {
      if (uses.length === 0) return
      const json = usesJson(uses)
      const d = api_key_deferred_uses
      await db.execute(sql`
        insert into ${d} (key_id, used_at)
        select k.id, u.used_at from json_to_recordset(${json}::json) as u(key_hash text, used_at timestamptz)
        join ${api_keys} k on k.key_hash = u.key_hash
        on conflict (key_id) do update set used_at = greatest(${d.used_at}, excluded.used_at)`)
    },

    /** Takes the deferred uses (deferKeyUses), removing them: the caller writes them as its own. */
    async takeDeferredKeyUses(): Promise<KeyUse[]> {
      const result = await db.execute(sql`
        delete from ${api_key_deferred_uses} d using ${api_keys} k where k.id = d.key_id
        returning k.key_hash, d.used_at`)
      return rowsOf<{ key_hash: string; used_at: string | Date }>(result).map((r) => ({ keyHash: r.key_hash, usedAt: new Date(r.used_at) }))
    },

    async count(): Promise<number> {
      const [row] = await db.select({ n: count() }).from(projects)
      return row!.n
    },
  }
}
