import { isId } from '../domain/ids.js'
import { notFound } from '../http/errors.js'
import type { Handler } from '../http/types.js'
import { apiKeyRecord, projectRecord } from './records.js'

const requireProjectId = (id: string) => {
  if (!isId('prj', id)) throw notFound('project')
  return id
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
    headers: { location: `/admin/v1/projects/${project.id}` },
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

export const adminCreateApiKey: Handler<'adminCreateApiKey'> = async ({ params }, { repos }) => {
  const created = await repos.projects.createKey(requireProjectId(params.id))
  if (!created) throw notFound('project')
  return {
    status: 201,
    body: { data: apiKeyRecord(created.key), api_key: created.apiKey },
    headers: { location: `/admin/v1/projects/${params.id}/api-keys/${created.key.id}` },
  }
}

export const adminRevokeApiKey: Handler<'adminRevokeApiKey'> = async ({ params }, { repos }) => {
  const projectId = requireProjectId(params.id)
  if (!isId('key', params.key_id) || !(await repos.projects.revokeKey(projectId, params.key_id))) throw notFound('API key')
  return { status: 204, body: undefined }
}
