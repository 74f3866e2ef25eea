// Whose rows a query may touch: a project, named by its id once the guard has looked its API key
// up, or named by the API key itself. A read scoped by the key takes its project id from a
// subquery of the live key, so the one statement both authenticates and reads: it finds rows only
// while the key is neither revoked nor expired (and, for the beta area, while its project has the
// beta feature).
// Rows found prove the key; finding none proves nothing, and the caller looks the key up to tell
// a 401 or 403 from an empty answer (see http/guard.ts).
import { and, eq, gt, isNull, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import { BETA_EVENT_TYPES } from '../../webhooks/event-types.js'
import { api_keys, projects } from '../schema.js'
import type { Input } from './page.js'

export interface KeyScope {
  /** SHA-256 of the API key, hex, as api_keys stores it. */
  keyHash: string
  /** Whether the project must have the beta feature. */
  beta: boolean
}

export type ProjectScope = string | KeyScope

/** A project id in a query: a value, a placeholder, or the live key's project. */
export type ProjectIdInput = Input<string> | SQL

/** How a prepared statement names its project: by id, or by a key (with the beta feature or not). */
export type ScopeShape = 'project' | 'key' | 'beta_key'

export const scopeShape = (scope: ProjectScope): ScopeShape => (typeof scope === 'string' ? 'project' : scope.beta ? 'beta_key' : 'key')

/**
 * The key with that hash while it is live: not revoked, and not past its expiry by the
 * database's clock, read at the moment of the statement (nothing is cached, so an expiry or a
 * revocation applies to the very next request on every instance). Both key lookups use it: the
 * guard's (projects.findByKeyHash) and the key-scoped reads' below.
 */
export const liveKey = (keyHash: Input<string>): SQL =>
  and(eq(api_keys.key_hash, keyHash), isNull(api_keys.revoked_at), or(isNull(api_keys.expires_at), gt(api_keys.expires_at, sql`now()`)))!

/** The project of a live key, as a scalar subquery (no row, so NULL, when the key is not live). */
function liveKeyProject(keyHash: Input<string>, beta: boolean): SQL {
  const live = liveKey(keyHash)
  return beta
    ? sql`(select ${api_keys.project_id} from ${api_keys} inner join ${projects} on ${projects.id} = ${api_keys.project_id} where ${live} and ${projects.beta_enabled})`
    : sql`(select ${api_keys.project_id} from ${api_keys} where ${live})`
}

/** The project id with its value: the id, or the live key's project. */
export const projectIdOf = (scope: ProjectScope): ProjectIdInput => (typeof scope === 'string' ? scope : liveKeyProject(scope.keyHash, scope.beta))

/** The project id in a statement prepared for `shape`; scopeParameters() gives its values. */
export const projectIdPlaceholder = (shape: ScopeShape): ProjectIdInput =>
  shape === 'project' ? sql.placeholder('projectId') : liveKeyProject(sql.placeholder('keyHash'), shape === 'beta_key')

export const scopeParameters = (scope: ProjectScope) => (typeof scope === 'string' ? { projectId: scope } : { keyHash: scope.keyHash })

/**
 * Whether an event (its `type`, of project `projectId`) is its project's to show or to send: one
 * of the beta area's only while the project has the beta feature, like the beta area itself
 * (api-contract §3). The event log (webhooks.ts) and the dispatcher's claim (dispatch.ts) both ask.
 */
export const eventInScope = (type: SQLWrapper, projectId: SQLWrapper): SQL =>
  sql`(${type} not in (${sql.join(
    BETA_EVENT_TYPES.map((beta) => sql`${beta}`),
    sql`, `,
  )}) or exists (select 1 from projects p where p.id = ${projectId} and p.beta_enabled))`
