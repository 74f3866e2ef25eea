// A JSON body that is already text. An event's record is stored as the JSON of the resource at
// the moment it happened (webhooks/event-record.ts), up to 100 000 characters of a changelog
// entry's body: a page of them is spliced together as it is stored, instead of each being parsed
// and written again (which cost a page of a hundred large events its size three times over in
// memory, and the CPU of both). The type parameter is the value the text encodes, so that a
// handler still answers its operation's schema; tests check the text against the spec like any
// other body.
import type { components } from '../../generated/api.js'

/** What Fastify sends a serialized body as, and so what a body sent as text is sent as. */
export const JSON_TYPE = 'application/json; charset=utf-8'

export class JsonText<T> {
  /** Never set: it only ties the text to the type it encodes. */
  declare readonly encodes?: T

  /**
   * @param text the body, as sent
   * @param rows how many stored rows it holds: a read by key with none proves nothing (guard.ts)
   */
  constructor(
    readonly text: string,
    readonly rows: number,
  ) {}
}

type Pagination = components['schemas']['Pagination']

/** A page (`{ data, pagination }`) of items that are each JSON text already. */
export function jsonPage<T>(page: { data: string[]; pagination: Pagination }): JsonText<{ data: T[]; pagination: Pagination }> {
  return new JsonText(`{"data":[${page.data.join(',')}],"pagination":${JSON.stringify(page.pagination)}}`, page.data.length)
}

/** A record (`{ data }`) that is JSON text already. */
export function jsonRecord<T>(data: string): JsonText<{ data: T }> {
  return new JsonText(`{"data":${data}}`, 1)
}
