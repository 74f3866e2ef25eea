// The Standard Webhooks headers of one attempt (api-contract §10), signed by the specification's
// own library, so that what a receiver's library verifies is what that library signed.
import { Webhook } from 'standardwebhooks'

export interface SignatureHeaders {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

/**
 * The headers of an attempt made at `at` to deliver `body`, the event `eventId`. `secrets`: the
 * endpoint's secret, then, while it is still valid after a rotation, the previous one, so that
 * a receiver verifies with either (space-separated, the newest first).
 */
export function signatureHeaders(eventId: string, body: string, at: Date, secrets: readonly string[]): SignatureHeaders {
  if (secrets.length === 0) throw new Error('a delivery is signed with at least one secret')
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(' '),
  }
}
