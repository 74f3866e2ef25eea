// The event types of api-contract §10. openapi.yaml's top-level `webhooks` map has one entry per
// type, and a test holds the two to each other.
export const EVENT_TYPES = [
  'beta_tester.enrolled',
  'beta_tester.joined',
  'beta_tester.declined',
  'beta_tester.revoked',
  'beta_tester.restored',
  'beta_feedback.created',
  'changelog_entry.published',
  'webhook.test',
] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** What an endpoint subscribes to when it names no types: every type, now and later. */
export const EVERY_TYPE = '*'

/**
 * An endpoint's `events` as stored: the types sent, de-duplicated in first-seen order, or
 * `["*"]` when they include `*` (every type covers the rest) or are omitted.
 */
export function subscription(events: readonly string[] | undefined): string[] {
  if (events === undefined || events.includes(EVERY_TYPE)) return [EVERY_TYPE]
  return [...new Set(events)]
}
