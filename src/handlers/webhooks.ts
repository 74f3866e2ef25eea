import type { DeliveryRow, EndpointPatch, EndpointRow } from '../db/repos/webhooks.js'
import { MAX_ENDPOINTS } from '../db/repos/webhooks.js'
import type { Config } from '../config.js'
import { isId } from '../domain/ids.js'
import { newWebhookSecret } from '../domain/secrets.js'
import { ifMatch, preconditionFailed } from '../http/conditional.js'
import { ApiError, invalidField, notFound } from '../http/errors.js'
import { readByKey } from '../http/guard.js'
import { holdsSecret, SHOWS_SECRET, type SecretSource } from '../http/idempotency.js'
import type { Handler } from '../http/types.js'
import { endpointUrlRefusal } from '../webhooks/endpoint-url.js'
import { subscription } from '../webhooks/event-types.js'
import { page, pageRequest, projectPageRequest } from './pagination.js'
import { iso, isoOrNull, type Schemas } from './records.js'

/** The record: never the secret (shown only by create and rotate-secret). */
export function endpointRecord(row: EndpointRow): Schemas['WebhookEndpoint'] {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description ?? null,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason ?? null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  }
}

/** The record; `next_attempt_at` only while the delivery is pending. */
export function deliveryRecord(row: DeliveryRow): Schemas['WebhookDelivery'] {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    // The outbox writes only the types of event-types.ts into this text column.
    event_type: row.event_type as Schemas['EventType'],
    status: row.status,
    attempts: row.attempts,
    last_attempt_at: isoOrNull(row.last_attempt_at),
    last_response_status: row.last_response_status ?? null,
    last_error: row.last_error ?? null,
    next_attempt_at: row.status === 'pending' ? isoOrNull(row.next_attempt_at) : null,
    created_at: iso(row.created_at),
  }
}

/** A path id of another kind or shape is a 404 without asking the database. */
const endpointId = (id: string) => {
  if (!isId('we', id)) throw notFound('webhook endpoint')
  return id
}

const deliveryId = (id: string) => {
  if (!isId('wd', id)) throw notFound('delivery')
  return id
}

/** The url as sent, once the rules the schema cannot express allow it (webhooks/endpoint-url.ts). */
function endpointUrl(url: string, config: Config): string {
  const refusal = endpointUrlRefusal(url, config.webhookAllowPrivateNetworks)
  if (refusal) throw invalidField('body', '/url', refusal)
  return url
}

const endpointDisabled = (reason: EndpointRow['disabled_reason']) =>
  new ApiError(
    'endpoint_disabled',
    `The endpoint is disabled${reason ? ` (disabled_reason ${reason})` : ''}; enable it with PATCH {"enabled": true} first.`,
  )

const endpointPath = (id: string) => `/v1/webhook-endpoints/${id}`
const createdSortKey = (row: { created_at: Date; id: string }) => ({ at: row.created_at, id: row.id })

/**
 * The secret of an answer replayed under an Idempotency-Key: the endpoint's as it is now, since
 * none is stored with the answer; an endpoint deleted since has none to show (openapi.yaml says so).
 */
const currentSecret: SecretSource = {
  current: (repos, projectId, answer) => repos.webhooks.secret(projectId, answer.data.id),
  gone: () =>
    new ApiError('not_found', 'The webhook endpoint of this Idempotency-Key has been deleted since, and its secret with it; a new request needs a new key.'),
}

export const createWebhookEndpoint: Handler<'createWebhookEndpoint'> = holdsSecret(async ({ body, principal }, { repos, config }) => {
  // A request schema has no `default` (bodies are validated as sent): the defaults its descriptions give are applied here.
  const fields = {
    url: endpointUrl(body.url, config),
    events: subscription(body.events),
    description: body.description ?? null,
    enabled: body.enabled ?? true,
  }
  const secret = newWebhookSecret()
  const created = await repos.transaction((tx) => tx.webhooks.create(principal.projectId, fields, secret))
  if (created.outcome === 'limit_exceeded') {
    throw new ApiError('limit_exceeded', `A project has at most ${MAX_ENDPOINTS} webhook endpoints; delete one first.`)
  }
  return { status: 201, body: { data: endpointRecord(created.row), secret }, headers: { location: endpointPath(created.row.id), ...SHOWS_SECRET } }
}, currentSecret)

export const listWebhookEndpoints = readByKey<'listWebhookEndpoints'>(async ({ query, project }, { repos }) => {
  const request = await projectPageRequest(query, 25, 'webhook-endpoints', project, repos)
  const rows = await repos.webhooks.list(project, { ...request, limit: request.limit + 1 })
  return { status: 200, body: page(rows, request, request.scope, createdSortKey, endpointRecord) }
})

export const getWebhookEndpoint = readByKey<'getWebhookEndpoint'>(async ({ params, project }, { repos }) => {
  const row = await repos.webhooks.get(project, endpointId(params.id))
  if (!row) throw notFound('webhook endpoint')
  return { status: 200, body: { data: endpointRecord(row) }, headers: { etag: row.etag } }
})

export const updateWebhookEndpoint: Handler<'updateWebhookEndpoint'> = async ({ params, body, headers, principal }, { repos, config }) => {
  const patch: EndpointPatch = {
    ...(body.url !== undefined ? { url: endpointUrl(body.url, config) } : {}),
    ...(body.events !== undefined ? { events: subscription(body.events) } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
  }
  // In a transaction: enabling or disabling the endpoint moves its pending deliveries with it.
  const result = await repos.transaction((tx) => tx.webhooks.update(principal.projectId, endpointId(params.id), patch, ifMatch(headers['if-match'])))
  switch (result.outcome) {
    case 'updated':
      return { status: 200, body: { data: endpointRecord(result.row) }, headers: { etag: result.row.etag } }
    case 'not_found':
      throw notFound('webhook endpoint')
    case 'precondition_failed':
      throw preconditionFailed()
  }
}

export const deleteWebhookEndpoint: Handler<'deleteWebhookEndpoint'> = async ({ params, headers, principal }, { repos }) => {
  const result = await repos.webhooks.delete(principal.projectId, endpointId(params.id), ifMatch(headers['if-match']))
  if (result === 'not_found') throw notFound('webhook endpoint')
  if (result === 'precondition_failed') throw preconditionFailed()
  return { status: 204, body: undefined }
}

export const rotateWebhookEndpointSecret: Handler<'rotateWebhookEndpointSecret'> = holdsSecret(async ({ params, principal }, { repos }) => {
  const secret = newWebhookSecret()
  const row = await repos.webhooks.rotateSecret(principal.projectId, endpointId(params.id), secret)
  if (!row) throw notFound('webhook endpoint')
  return { status: 200, body: { data: endpointRecord(row), secret }, headers: { ...SHOWS_SECRET } }
}, currentSecret)

export const testWebhookEndpoint: Handler<'testWebhookEndpoint'> = async ({ params, principal }, { repos }) => {
  const id = endpointId(params.id)
  const delivery = await repos.transaction(async (tx) => {
    // Locked until the event and its delivery are written: neither disabled nor deleted meanwhile.
    const endpoint = await tx.webhooks.lock(principal.projectId, id)
    if (!endpoint) throw notFound('webhook endpoint')
    if (!endpoint.enabled) throw endpointDisabled(endpoint.disabled_reason)
    const recorded = await tx.outbox.recordFor(principal.projectId, id, 'webhook.test', endpointRecord(endpoint))
    return tx.webhooks.delivery(principal.projectId, id, recorded.delivery)
  })
  return { status: 202, body: { data: deliveryRecord(delivery!) } }
}

export const listWebhookDeliveries = readByKey<'listWebhookDeliveries'>(async ({ params, query, project }, { repos }) => {
  const scope = `deliveries:${params.endpoint_id}:${query.status ?? '*'}`
  const request = pageRequest(query, 25, scope)
  const endpoint = endpointId(params.endpoint_id)
  const rows = await repos.webhooks.deliveries(project, endpoint, { status: query.status, ...request, limit: request.limit + 1 })
  if (!rows) throw notFound('webhook endpoint')
  return { status: 200, body: page(rows, request, scope, createdSortKey, deliveryRecord) }
})

export const getWebhookDelivery = readByKey<'getWebhookDelivery'>(async ({ params, project }, { repos }) => {
  const row = await repos.webhooks.delivery(project, endpointId(params.endpoint_id), deliveryId(params.id))
  if (!row) throw notFound('delivery')
  return { status: 200, body: { data: deliveryRecord(row) } }
})

export const retryWebhookDelivery: Handler<'retryWebhookDelivery'> = async ({ params, principal }, { repos }) => {
  const endpoint = endpointId(params.endpoint_id)
  const id = deliveryId(params.id)
  // In a transaction of its own (or the Idempotency-Key's), which wakes the dispatcher once it commits.
  const result = await repos.transaction((tx) => tx.webhooks.retry(principal.projectId, endpoint, id))
  switch (result.outcome) {
    case 'retried':
      return { status: 202, body: { data: deliveryRecord(result.row) } }
    case 'not_found':
      throw notFound('delivery')
    case 'endpoint_disabled':
      throw endpointDisabled(result.reason)
  }
}
