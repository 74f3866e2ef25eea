import type { TesterRow } from '../db/repos/testers.js'
import { EMAIL_MAX_LENGTH, normaliseEmail } from '../domain/email.js'
import { isId } from '../domain/ids.js'
import { refusedApiTransitionMessage } from '../domain/tester-status.js'
import { ifMatch, preconditionFailed } from '../http/conditional.js'
import { ApiError, invalidField, notFound } from '../http/errors.js'
import { readByKey } from '../http/guard.js'
import type { Handler } from '../http/types.js'
import { programId } from './beta-programs.js'
import { joinPath, publicLink } from '../portal/links.js'
import { page, pageRequest } from './pagination.js'
import { iso, isoOrNull, type Schemas } from './records.js'

/** The record; `join_url` only when the public address is configured (PUBLIC_BASE_URL). */
export function testerRecord(row: TesterRow, publicBaseUrl: string | undefined): Schemas['BetaTester'] {
  return {
    id: row.id,
    beta_program_id: row.beta_program_id,
    email: row.email,
    token: row.token,
    source: row.source,
    status: row.status,
    end_user_id: row.end_user_id ?? null,
    invited_at: iso(row.invited_at),
    joined_at: isoOrNull(row.joined_at),
    join_url: publicBaseUrl === undefined ? null : publicLink(publicBaseUrl, joinPath(row.token)),
  }
}

const testerId = (id: string) => {
  if (!isId('bt', id)) throw notFound('beta tester')
  return id
}

export const enrollBetaTester: Handler<'enrollBetaTester'> = async ({ params, body, principal }, { repos, config }) => {
  const email = normaliseEmail(body.email)
  // The schema has checked the pattern: only lowercasing can have made the address too long.
  if (email === undefined) throw invalidField('body', '/email', `must be at most ${EMAIL_MAX_LENGTH} characters once trimmed, lowercased and in NFC`)
  const pid = programId(params.program_id)
  const result = await repos.testers.enroll(principal.projectId, pid, email, (row) => testerRecord(row, config.publicBaseUrl))
  switch (result.outcome) {
    case 'created':
      return {
        status: 201,
        body: { data: testerRecord(result.row, config.publicBaseUrl) },
        headers: { location: `/v1/beta/programs/${pid}/testers/${result.row.id}` },
      }
    case 'existing':
      return { status: 200, body: { data: testerRecord(result.row, config.publicBaseUrl) } }
    case 'program_not_found':
      throw notFound('beta program')
    case 'program_closed':
      throw new ApiError('program_closed', 'The program is closed; reopen it to enroll testers.')
  }
}

const testerSortKey = (row: TesterRow) => ({ at: row.invited_at, id: row.id })

export const listBetaTesters = readByKey<'listBetaTesters'>(async ({ params, query, project }, { repos, config }) => {
  const scope = `testers:${params.program_id}:${query.status ?? '*'}`
  const request = pageRequest(query, 25, scope)
  const program = programId(params.program_id)
  const rows = await repos.testers.list(project, program, { status: query.status, ...request, limit: request.limit + 1 })
  if (!rows) throw notFound('beta program')
  return { status: 200, body: page(rows, request, scope, testerSortKey, (row) => testerRecord(row, config.publicBaseUrl)) }
})

export const getBetaTester = readByKey<'getBetaTester'>(async ({ params, project }, { repos, config }) => {
  const row = await repos.testers.get(project, programId(params.program_id), testerId(params.id))
  if (!row) throw notFound('beta tester')
  return { status: 200, body: { data: testerRecord(row, config.publicBaseUrl) }, headers: { etag: row.etag } }
})

export const deleteBetaTester: Handler<'deleteBetaTester'> = async ({ params, headers, principal }, { repos }) => {
  const result = await repos.testers.delete(principal.projectId, programId(params.program_id), testerId(params.id), ifMatch(headers['if-match']))
  if (result === 'not_found') throw notFound('beta tester')
  if (result === 'precondition_failed') throw preconditionFailed()
  return { status: 204, body: undefined }
}

export const updateBetaTester: Handler<'updateBetaTester'> = async ({ params, body, headers, principal }, { repos, config }) => {
  const precondition = ifMatch(headers['if-match'])
  const result = await repos.transaction(async (tx) => {
    const update = await tx.testers.setStatus(principal.projectId, programId(params.program_id), testerId(params.id), body.status, precondition)
    if (update.outcome === 'updated' && update.changed) {
      await tx.outbox.record(principal.projectId, update.row.status === 'revoked' ? 'beta_tester.revoked' : 'beta_tester.restored', testerRecord(update.row, config.publicBaseUrl))
    }
    return update
  })
  switch (result.outcome) {
    case 'updated':
      return { status: 200, body: { data: testerRecord(result.row, config.publicBaseUrl) }, headers: { etag: result.row.etag } }
    case 'not_found':
      throw notFound('beta tester')
    case 'precondition_failed':
      throw preconditionFailed()
    case 'invalid_transition':
      throw new ApiError('invalid_transition', refusedApiTransitionMessage(result.from, body.status!))
  }
}
