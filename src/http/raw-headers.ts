import type { FastifyRequest } from 'fastify'

/**
 * How many times the request sent the header `name` (lower case). Node keeps only the first of
 * some repeated headers (Authorization among them) and joins the values of others with ", ", so
 * a repeat is visible only in the raw list.
 */
export function timesSent(request: FastifyRequest, name: string): number {
  const raw = request.raw.rawHeaders
  let sent = 0
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name) sent++
  return sent
}
