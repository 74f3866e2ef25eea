import type { ProgramFields, ProgramPatch, ProgramRow } from '../db/repos/programs.js'
import { isId } from '../domain/ids.js'
import { refusedTransitionMessage } from '../domain/program-status.js'
import { slugify } from '../domain/slug.js'
import { ifMatch, preconditionFailed } from '../http/conditional.js'
import { ApiError, notFound } from '../http/errors.js'
import { readByKey } from '../http/guard.js'
import type { Handler } from '../http/types.js'
import { page, projectPageRequest } from './pagination.js'
import { iso, isoOrNull, type Schemas } from './records.js'

export function programRecord(row: ProgramRow): Schemas['BetaProgram'] {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    version: row.version ?? null,
    slug: row.slug,
    summary: row.summary ?? null,
    access_url: row.access_url ?? null,
    access_instructions: row.access_instructions ?? null,
    status: row.status,
    allow_public_signup: row.allow_public_signup,
    feedback_deadline: isoOrNull(row.feedback_deadline),
    created_at: iso(row.created_at),
  }
}

/** A path id of another kind or shape is a 404 without asking the database. */
export function programId(id: string): string {
  if (!isId('bp', id)) throw notFound('beta program')
  return id
}


const programSortKey = (row: ProgramRow) => ({ at: row.created_at, id: row.id })

// The schema's `date-time` format has checked the value, its zone and its year (validation.ts).
const deadline = (value: string | null) => (value === null ? null : new Date(value.toUpperCase()))

export const createBetaProgram: Handler<'createBetaProgram'> = async ({ body, principal }, { repos }) => {
  const name = body.name.trim()
  // A request schema has no `default` (bodies are validated as sent): the defaults its descriptions give are applied here.
  const fields: ProgramFields = {
    name,
    version: body.version ?? null,
    summary: body.summary ?? null,
    access_url: body.access_url ?? null,
    access_instructions: body.access_instructions ?? null,
    status: body.status ?? 'draft',
    allow_public_signup: body.allow_public_signup ?? false,
    feedback_deadline: deadline(body.feedback_deadline ?? null),
  }
  const row = await repos.programs.create(principal.projectId, slugify(name), fields)
  return { status: 201, body: { data: programRecord(row) }, headers: { location: `/v1/beta/programs/${row.id}` } }
}

export const getBetaProgram = readByKey<'getBetaProgram'>(async ({ params, project }, { repos }) => {
  const row = await repos.programs.get(project, programId(params.id))
  if (!row) throw notFound('beta program')
  return { status: 200, body: { data: programRecord(row) }, headers: { etag: row.etag } }
})

export const listBetaPrograms = readByKey<'listBetaPrograms'>(async ({ query, project }, { repos }) => {
  // A cursor carries the filter it was issued under: the same position means another row elsewhere.
  const request = await projectPageRequest(query, 25, `programs:${query.status ?? '*'}`, project, repos)
  const rows = await repos.programs.list(project, { status: query.status, ...request, limit: request.limit + 1 })
  return { status: 200, body: page(rows, request, request.scope, programSortKey, programRecord) }
})

export const updateBetaProgram: Handler<'updateBetaProgram'> = async ({ params, body, headers, principal }, { repos }) => {
  const patch: ProgramPatch = {
    ...(body.name !== undefined ? { name: body.name.trim() } : {}),
    ...(body.version !== undefined ? { version: body.version } : {}),
    ...(body.summary !== undefined ? { summary: body.summary } : {}),
    ...(body.access_url !== undefined ? { access_url: body.access_url } : {}),
    ...(body.access_instructions !== undefined ? { access_instructions: body.access_instructions } : {}),
    ...(body.status !== undefined ? { status: body.status } : {}),
    ...(body.allow_public_signup !== undefined ? { allow_public_signup: body.allow_public_signup } : {}),
    ...(body.feedback_deadline !== undefined ? { feedback_deadline: deadline(body.feedback_deadline) } : {}),
  }
  const result = await repos.programs.update(principal.projectId, programId(params.id), patch, ifMatch(headers['if-match']))
  switch (result.outcome) {
    case 'updated':
      return { status: 200, body: { data: programRecord(result.row) }, headers: { etag: result.row.etag } }
    case 'not_found':
      throw notFound('beta program')
    case 'precondition_failed':
      throw preconditionFailed()
    case 'invalid_transition':
      throw new ApiError('invalid_transition', refusedTransitionMessage(result.from, patch.status!))
  }
}

export const deleteBetaProgram: Handler<'deleteBetaProgram'> = async ({ params, headers, principal }, { repos }) => {
  const result = await repos.programs.delete(principal.projectId, programId(params.id), ifMatch(headers['if-match']))
  if (result === 'not_found') throw notFound('beta program')
  if (result === 'precondition_failed') throw preconditionFailed()
  return { status: 204, body: undefined }
}
