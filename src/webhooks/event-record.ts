// An event as the API shows it (GET /v1/events) and as a delivery's body carries it: the same
// bytes in both places. `data` is stored as the JSON text of the resource's record, written in
// the transaction of the change (db/repos/outbox.ts), and is spliced in as it is, never parsed
// and written again, so what a receiver verifies is what the event log holds.
import type { components } from '../../generated/api.js'

export type EventRecord = components['schemas']['Event']

/**
 * How many days the event log keeps an event (api-contract §10): the one number behind what
 * GET /v1/events shows, what pruning deletes, and what openapi.yaml says (a test holds the spec
 * to it).
 */
export const EVENT_LOG_DAYS = 30

/** An events row, as the repositories read it. */
export interface EventRow {
  id: string
  type: string
  /** The resource's record, as JSON text. */
  data: string
  created_at: Date
}

/** The event as JSON text: a delivery's body, and each event of GET /v1/events and /v1/events/{id}. */
export function eventJson(row: EventRow): string {
  return `{"id":${JSON.stringify(row.id)},"type":${JSON.stringify(row.type)},"created_at":${JSON.stringify(row.created_at.toISOString())},"data":${row.data}}`
}
