// A list read to its end by cursor, as a client pages through it.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { call } from './app.js'

/**
 * Follows next_cursor from the first page of `url` (with its filters) to the last, `limit` rows a
 * page; the ids in the order read. Each page but the last says it has more.
 */
export async function walkPages(t: Test, app: FastifyInstance, key: string, url: string, limit: number): Promise<string[]> {
  const sep = url.includes('?') ? '&' : '?'
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res = await call(t, app, { url: `${url}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key })
    t.equal(res.status, 200)
    seen.push(...res.json.data.map((row: { id: string }) => row.id))
    cursor = res.json.pagination.next_cursor
    t.equal(res.json.pagination.has_more, cursor !== null, 'a cursor exactly while there is more')
  } while (cursor)
  return seen
}
