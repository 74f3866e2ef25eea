import { isId } from '../domain/ids.js'
import { notFound } from '../http/errors.js'
import { readByKey } from '../http/guard.js'
import { jsonPage, jsonRecord } from '../http/json-text.js'
import { eventJson, type EventRecord } from '../webhooks/event-record.js'
import { page as pageOf, projectPageRequest } from './pagination.js'

const eventId = (id: string) => {
  if (!isId('evt', id)) throw notFound('event')
  return id
}

export const listEvents = readByKey<'listEvents'>(async (request, { repos }) => {
  const { query, project } = request
  // A cursor carries the filter it was issued under: the same position means another row elsewhere.
  const page = await projectPageRequest(query, 25, `events:${query.type ?? '*'}`, project, repos)
  const rows = await repos.webhooks.events(project, { type: query.type, ...page, limit: page.limit + 1 }, (bytes) => request.holdAnswer(bytes))
  return { status: 200, body: jsonPage<EventRecord>(pageOf(rows, page, page.scope, (row) => ({ at: row.created_at, id: row.id }), eventJson)) }
})

export const getEvent = readByKey<'getEvent'>(async ({ params, project }, { repos }) => {
  const row = await repos.webhooks.event(project, eventId(params.id))
  if (!row) throw notFound('event')
  return { status: 200, body: jsonRecord<EventRecord>(eventJson(row)) }
})
