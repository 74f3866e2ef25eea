// The event types of api-contract §10. openapi.yaml's top-level `webhooks` map has one entry per
// type, and its enums list them; test/webhooks/event-types.test.ts holds all of them to this list,
// at compile time (the generated unions) and at run time.
//
// Each is written in the transaction of the change it reports, by `tx.outbox.record` in the
// handler or job that makes the change (`grep -rn "outbox.record" src`), with one exception: an
// enrollment through the API (the hot write) writes its `beta_tester.enrolled` inside its own
// statement (db/repos/testers.ts, with outbox.ts's eventCtes). A signup on the portal writes the
// same type the usual way (handlers/portal-beta.ts).
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

/**
 * The types of the beta area's events (its testers and their feedback). Like the beta area itself
 * (api-contract §3), they are the project's only while it has the beta feature: the event log
 * hides them while the feature is off.
 */
export const BETA_EVENT_TYPES: readonly EventType[] = EVENT_TYPES.filter((type) => type.startsWith('beta_'))

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
