// Conditional GETs for the public changelog page and feeds. Feed readers poll: most polls
// should cost one query and an empty 304. The ETag is a hash of the representation, so it
// changes with anything shown (an entry published, edited, translated, deleted); Last-Modified
// (feeds only) is the latest change among the entries shown and cannot see a deletion, which
// is why If-None-Match wins when both are sent (RFC 9110 §13.2.2).
import type { IncomingHttpHeaders } from 'node:http'
import { entityTag } from '../http/conditional.js'

/** Shared caches may keep a copy for a minute: a scheduled entry shows up at most that late. */
export const PUBLIC_CACHE_CONTROL = 'public, max-age=60'

export interface Representation<B> {
  /** What is sent: a string, or an object Fastify serialises with JSON.stringify. */
  body: B
  contentType: string
  /** The latest change among the entries shown; undefined sends no Last-Modified. */
  lastModified?: Date
  /** Extra headers for the 200 and the 304 alike (CORS on feeds). */
  headers?: Record<string, string>
}

export type ConditionalReply<B> =
  | { status: 200; body: B; headers: Record<string, string> }
  | { status: 304; body: undefined; headers: Record<string, string> }

/** Whether an If-None-Match value names `etag`, by the weak comparison a GET uses. */
function noneMatch(header: string, etag: string): boolean {
  return header.split(',').some((raw) => {
    const tag = raw.trim()
    return tag === '*' || tag.replace(/^W\//, '') === etag
  })
}

/** Whole seconds, the precision of an HTTP date. */
const seconds = (date: Date) => Math.floor(date.getTime() / 1000)

function notModifiedSince(header: string, lastModified: Date): boolean {
  const since = Date.parse(header)
  // A value that is not a date is ignored, as RFC 9110 asks.
  return Number.isFinite(since) && seconds(lastModified) <= Math.floor(since / 1000)
}

/** A 200 with validators and cache headers, or an empty 304 when the client's copy is current. */
export function conditionalReply<B>(requestHeaders: IncomingHttpHeaders, rep: Representation<B>): ConditionalReply<B> {
  const bytes = typeof rep.body === 'string' ? rep.body : JSON.stringify(rep.body)
  const etag = entityTag(`${rep.contentType}\n${bytes}`)
  const headers: Record<string, string> = {
    etag,
    'cache-control': PUBLIC_CACHE_CONTROL,
    ...(rep.lastModified ? { 'last-modified': rep.lastModified.toUTCString() } : {}),
    ...rep.headers,
  }
  const inm = requestHeaders['if-none-match']
  const ims = requestHeaders['if-modified-since']
  const current =
    inm !== undefined ? noneMatch(inm, etag) : ims !== undefined && rep.lastModified !== undefined && notModifiedSince(ims, rep.lastModified)
  if (current) return { status: 304, body: undefined, headers }
  return { status: 200, body: rep.body, headers: { ...headers, 'content-type': rep.contentType } }
}
