// Secrets handed to clients once: API keys, tester tokens and webhook signing secrets. Keys are
// kept only as SHA-256 hashes; a tester token is stored as is because the portal must look
// testers up by it, and a signing secret because every delivery is signed with it.
import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto'
import { nanoid } from 'nanoid'

const API_KEY = /^fbk_[A-Za-z0-9_-]{40}$/

export const newApiKey = (): string => `fbk_${nanoid(40)}`
export const isApiKeyShape = (value: string): boolean => API_KEY.test(value)
// crypto.hash: one call, no Hash object (it runs on every request).
export const hashApiKey = (key: string): string => hash('sha256', key, 'hex')
/** What an operator sees to tell keys apart: `fbk_` and the next four characters. */
export const apiKeyPrefix = (key: string): string => key.slice(0, 8)

export const TESTER_TOKEN_LENGTH = 32
export const newTesterToken = (): string => nanoid(TESTER_TOKEN_LENGTH)

/**
 * A webhook endpoint's signing secret: `whsec_` and the base64 of 32 random bytes, the form the
 * Standard Webhooks libraries take (`new Webhook(secret)`), keyed by the decoded bytes.
 */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`

/** Compares two secrets in time independent of where they differ (and of their lengths). */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}
