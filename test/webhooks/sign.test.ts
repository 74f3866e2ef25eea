// The Standard Webhooks headers: verified by the specification's own library, as a receiver
// would, with each secret in force; two signatures for the 24 hours after a rotation.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { signatureHeaders } from '../../src/webhooks/sign.js'
import { newWebhookSecret } from '../../src/domain/secrets.js'

const body = '{"id":"evt_0123456789ABCDEFGHIJK","type":"webhook.test","created_at":"2025-01-02T03:04:05.678Z","data":{"note":"é ✓"}}'
const eventId = 'evt_0123456789ABCDEFGHIJK'

t.test('one secret: webhook-id, the Unix seconds of the attempt, one v1 signature the library verifies', async (t) => {
  const secret = newWebhookSecret()
  const at = new Date()
  const headers = signatureHeaders(eventId, body, at, [secret])
  t.equal(headers['webhook-id'], eventId)
  t.equal(headers['webhook-timestamp'], String(Math.floor(at.getTime() / 1000)))
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/)
  t.same(new Webhook(secret).verify(body, { ...headers }), JSON.parse(body), 'verified, and the payload is the body')
  t.throws(() => new Webhook(newWebhookSecret()).verify(body, { ...headers }), WebhookVerificationError, 'another secret does not verify it')
  t.throws(() => new Webhook(secret).verify(body.replace('test', 'tset'), { ...headers }), WebhookVerificationError, 'nor does another body')
})

t.test('the signature is the contract’s HMAC: SHA-256 keyed by the decoded secret over id.timestamp.body', async (t) => {
  const secret = newWebhookSecret()
  const at = new Date('2025-01-02T03:04:05.999Z')
  const headers = signatureHeaders(eventId, body, at, [secret])
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  const expected = createHmac('sha256', key).update(`${eventId}.${Math.floor(at.getTime() / 1000)}.${body}`).digest('base64')
  t.equal(headers['webhook-signature'], `v1,${expected}`)
  t.equal(headers['webhook-timestamp'], '1735787045', 'whole seconds, rounded down')
})

t.test('after a rotation: two signatures, new then old, space-separated; each secret verifies', async (t) => {
  const current = newWebhookSecret()
  const previous = newWebhookSecret()
  const headers = signatureHeaders(eventId, body, new Date(), [current, previous])
  const [first, second, ...rest] = headers['webhook-signature'].split(' ')
  t.same(rest, [], 'two signatures')
  t.equal(first, signatureHeaders(eventId, body, new Date(Number(headers['webhook-timestamp']) * 1000), [current])['webhook-signature'], 'the new secret’s first')
  t.equal(second, signatureHeaders(eventId, body, new Date(Number(headers['webhook-timestamp']) * 1000), [previous])['webhook-signature'], 'the old one’s second')
  for (const secret of [current, previous]) t.same(new Webhook(secret).verify(body, { ...headers }), JSON.parse(body))
})

t.test('at least one secret', async (t) => {
  t.throws(() => signatureHeaders(eventId, body, new Date(), []))
})
