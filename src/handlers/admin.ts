import type { ApiKeyFields, ApiKeyRow, ProjectRow } from '../db/repos/projects.js'
import { isId } from '../domain/ids.js'
import { invalidField, notFound } from '../http/errors.js'
import type { Handler } from '../http/types.js'
import { page, pageRequest } from './pagination.js'
import { apiKeyRecord, projectRecord } from './records.js'
import { SHOWS_SECRET } from '../http/idempotency.js'

const requireProjectId = (id: string) => {
  if (!isId('prj', id)) throw notFound('project')
  return id
}

const projectSortKey = (row: ProjectRow) => ({ at: row.created_at, id: row.id })
const keySortKey = (row: ApiKeyRow) => ({ at: row.created_at, id: row.id })

/**
 * An expiry an operator sends: in the future, or null for never. This process's clock judges
 * "in the future", as for a scheduled changelog entry; the database's clock then decides, on
 * every request, whether the key has expired.
 */
function expiry(value: string | null): Date | null {
  if (value === null) return null
  const date = new Date(value.toUpperCase())
  if (!(date.getTime() > Date.now())) {
    throw invalidField('body', '/expires_at', 'must be in the future (to stop a key now, revoke it; null for no expiry)')
  }
  return date
}

/** The fields a key create or update body sets; names are stored trimmed. */
function keyFields(body: { name?: string | null; expires_at?: string | null } | undefined): ApiKeyFields {
  if (!body) return {}
  return {
    ...(body.name !== undefined ? { name: body.name === null ? null : body.name.trim() } : {}),
    ...(body.expires_at !== undefined ? { expires_at: expiry(body.expires_at) } : {}),
  }
}

export const adminListProjects: Handler<'adminListProjects'> = async ({ query }, { repos }) => {
  const scope = 'projects'
  const request = pageRequest(query, 25, scope)
  const rows = await repos.projects.list({ ...request, limit: request.limit + 1 })
  return { status: 200, body: page(rows, request, scope, projectSortKey, projectRecord) }
}

export const adminCreateProject: Handler<'adminCreateProject'> = async ({ body }, { repos }) => {
  const { project, apiKey } = await repos.projects.create({
    name: body.name.trim(),
    plan: body.plan ?? 'free',
    beta_enabled: body.beta_enabled ?? false,
  })
  return {
    status: 201,
    body: { data: projectRecord(project), api_key: apiKey },
    headers: { location: `/admin/v1/projects/${project.id}`, ...SHOWS_SECRET },
  }
}

export const adminGetProject: Handler<'adminGetProject'> = async ({ params }, { repos }) => {
  const project = await repos.projects.get(requireProjectId(params.id))
  if (!project) throw notFound('project')
  return { status: 200, body: { data: projectRecord(project) } }
}

export const adminUpdateProject: Handler<'adminUpdateProject'> = async ({ params, body }, { repos }) => {
  const project = await repos.projects.update(requireProjectId(params.id), {
    ...(body.name !== undefined ? { name: body.name.trim() } : {}),
    ...(body.plan !== undefined ? { plan: body.plan } : {}),
    ...(body.beta_enabled !== undefined ? { beta_enabled: body.beta_enabled } : {}),
  })
  if (!project) throw notFound('project')
  return { status: 200, body: { data: projectRecord(project) } }
}

export const adminListApiKeys: Handler<'adminListApiKeys'> = async ({ params, query }, { repos }) => {
  // A cursor of one project's keys means nothing in another's list; a query the list cannot use
  // is a 400 before an unknown project is a 404 (the contract's order of checks).
  const scope = `api-keys:${params.id}`
  const request = pageRequest(query, 25, scope)
  const projectId = requireProjectId(params.id)
  const rows = await repos.projects.listKeys(projectId, { ...request, limit: request.limit + 1 })
  if (!rows) throw notFound('project')
  return { status: 200, body: page(rows, request, scope, keySortKey, apiKeyRecord) }
}

export const adminCreateApiKey: Handler<'adminCreateApiKey'> = async ({ params, body }, { repos }) => {
  // A bad body is a 400 before an unknown id is a 404 (the contract's precedence).
  const fields = keyFields(body)
  const projectId = requireProjectId(params.id)
  const created = await repos.projects.createKey(projectId, fields)
  if (!created) throw notFound('project')
  return {
    status: 201,
    body: { data: apiKeyRecord(created.key), api_key: created.apiKey },
    headers: { location: `/admin/v1/projects/${projectId}/api-keys/${created.key.id}`, ...SHOWS_SECRET },
  }
}

export const adminGetApiKey: Handler<'adminGetApiKey'> = async ({ params }, { repos }) => {
  const projectId = requireProjectId(params.id)
  const key = isId('key', params.key_id) ? await repos.projects.getKey(projectId, params.key_id) : undefined
  if (!key) throw notFound('API key')
  return { status: 200, body: { data: apiKeyRecord(key) } }
}

export const adminUpdateApiKey: Handler<'adminUpdateApiKey'> = async ({ params, body }, { repos }) => {
  const fields = keyFields(body)
  const projectId = requireProjectId(params.id)
  const key = isId('key', params.key_id) ? await repos.projects.updateKey(projectId, params.key_id, fields) : undefined
  if (!key) throw notFound('API key')
  return { status: 200, body: { data: apiKeyRecord(key) } }
}

export const adminRevokeApiKey: Handler<'adminRevokeApiKey'> = async ({ params }, { repos }) => {
  const projectId = requireProjectId(params.id)
  if (!isId('key', params.key_id) || !(await repos.projects.revokeKey(projectId, params.key_id))) throw notFound('API key')
  return { status: 204, body: undefined }
}
