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
