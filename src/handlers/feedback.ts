import type { FeedbackRow } from '../db/repos/feedback.js'
import { isId } from '../domain/ids.js'
import { notFound } from '../http/errors.js'
import { readByKey } from '../http/guard.js'
import { programId } from './beta-programs.js'
import { page, pageRequest } from './pagination.js'
import { iso, type Schemas } from './records.js'

export function feedbackRecord(row: FeedbackRow): Schemas['BetaFeedback'] {
  return {
    id: row.id,
    beta_program_id: row.beta_program_id,
    beta_tester_id: row.beta_tester_id,
    body: row.body,
    rating: row.rating ?? null,
    created_at: iso(row.created_at),
  }
}

const feedbackSortKey = (row: FeedbackRow) => ({ at: row.created_at, id: row.id })

export const listBetaFeedback = readByKey<'listBetaFeedback'>(async ({ params, query, project }, { repos }) => {
  const scope = `feedback:${params.program_id}:${query.tester_id ?? '*'}`
  const request = pageRequest(query, 25, scope)
  const program = programId(params.program_id)
  const rows = await repos.feedback.list(project, program, { testerId: query.tester_id, ...request, limit: request.limit + 1 })
  if (!rows) throw notFound('beta program')
  return { status: 200, body: page(rows, request, scope, feedbackSortKey, feedbackRecord) }
})

export const getBetaFeedback = readByKey<'getBetaFeedback'>(async ({ params, project }, { repos }) => {
  const pid = programId(params.program_id)
  if (!isId('fb', params.id)) throw notFound('feedback')
  const row = await repos.feedback.get(project, pid, params.id)
  if (!row) throw notFound('feedback')
  return { status: 200, body: { data: feedbackRecord(row) } }
})
